# GPU capacity for site aws-use1 as planned: 1 capacity reservation(s),
# 2 node set(s) (Slurm instances or launch templates, EKS node groups).
# Every node sits in one cluster placement group, with EFA interfaces where the instance has them.
# Nothing else here provisions GPU nodes; schedule/aws-use1.csv says who holds which, when.
# Apply it month by month: months/NNN.tfvars sets the counts of each month (RUNBOOK.md).

resource "aws_placement_group" "gpu" {
  name     = "${var.name_prefix}-gpu"
  strategy = "cluster"
}

# EFA needs all traffic allowed between the members of one security group.
resource "aws_security_group" "efa" {
  name        = "${var.name_prefix}-efa"
  description = "EFA and NCCL traffic between GPU nodes"
  vpc_id      = var.vpc_id

  ingress {
    from_port = 0
    to_port   = 0
    protocol  = "-1"
    self      = true
  }

  egress {
    from_port = 0
    to_port   = 0
    protocol  = "-1"
    self      = true
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

# Month 0 as months since year 0, and each reservation's end date: 00:00 UTC on the first day of
# the plan month var.reservation_end_month names (AWS cancels a reservation within the hour).
locals {
  month0 = tonumber(substr(var.plan_start, 0, 4)) * 12 + tonumber(substr(var.plan_start, 5, 2)) - 1
  end_dates = {
    for id, month in var.reservation_end_month :
    id => format("%04d-%02d-01T00:00:00Z", floor((local.month0 + month) / 12), (local.month0 + month) % 12 + 1)
  }
}

# ---- reservation p5-48xlarge-reserved-1y: up to 16 x p5.48xlarge, reserved_1y, nodes p5-48xlarge-r1y[01-16],
# used by slurm. Terms: 16 nodes in months 0-11.
# It exists in the months its terms run, holding their nodes, and ends with the latest of them
# (months/NNN.tfvars). This holds the capacity; the reserved_1y discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform.
resource "aws_ec2_capacity_reservation" "p5_48xlarge_reserved_1y" {
  count = var.reserved_nodes["p5_48xlarge_reserved_1y"] > 0 ? 1 : 0

  instance_type           = "p5.48xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = var.reserved_nodes["p5_48xlarge_reserved_1y"]
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "limited"
  end_date                = local.end_dates["p5_48xlarge_reserved_1y"]

  tags = {
    "Name"                     = "${var.name_prefix}-p5-48xlarge-reserved-1y"
    "infra-compile.io/pool"    = "p5-48xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }
}

# ---- Slurm p5-48xlarge, reserved_1y: 16 static node(s) p5-48xlarge-r1y[01-16]
# (p5.48xlarge, 8x H100); an Auto Scaling group of the month's fixed size.
# The nodes start inside reservation p5-48xlarge-reserved-1y.
resource "aws_launch_template" "p5_48xlarge_reserved_1y_slurm" {
  name_prefix = "${var.name_prefix}-p5-48xlarge-reserved-1y-"

  image_id      = var.ami_id
  instance_type = "p5.48xlarge"
  key_name      = var.key_name

  placement {
    group_name = aws_placement_group.gpu.name
  }

  # 32 EFA network cards of 100 Gb/s; device index 0 on card 0 only.
  dynamic "network_interfaces" {
    for_each = range(32)
    content {
      network_card_index    = network_interfaces.value
      device_index          = network_interfaces.value == 0 ? 0 : 1
      interface_type        = "efa"
      subnet_id             = var.subnet_id
      security_groups       = [aws_security_group.efa.id]
      delete_on_termination = true
    }
  }

  # Inside the reservation in the months it exists.
  dynamic "capacity_reservation_specification" {
    for_each = aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y
    content {
      capacity_reservation_target {
        capacity_reservation_id = capacity_reservation_specification.value.id
      }
    }
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile.io/pool"    = "p5-48xlarge"
      "infra-compile.io/pricing" = "reserved_1y"
      "slurm-partition"          = "p5-48xlarge"
    }
  }
}

resource "aws_autoscaling_group" "p5_48xlarge_reserved_1y_slurm" {
  name                = "${var.name_prefix}-p5-48xlarge-reserved-1y"
  min_size            = var.nodes["p5_48xlarge_reserved_1y_slurm"]
  max_size            = var.nodes["p5_48xlarge_reserved_1y_slurm"]
  desired_capacity    = var.nodes["p5_48xlarge_reserved_1y_slurm"]
  vpc_zone_identifier = [var.subnet_id]
  placement_group     = aws_placement_group.gpu.id

  launch_template {
    id      = aws_launch_template.p5_48xlarge_reserved_1y_slurm.id
    version = aws_launch_template.p5_48xlarge_reserved_1y_slurm.latest_version
  }

  tag {
    key                 = "slurm-partition"
    value               = "p5-48xlarge"
    propagate_at_launch = true
  }

  # Slurm names these nodes p5-48xlarge-r1y[01-16]; slurmd on each registers under one of them.
  tag {
    key                 = "slurm-node-prefix"
    value               = "p5-48xlarge-r1y"
    propagate_at_launch = true
  }
}

# ---- Slurm p5-48xlarge, spot: 8 node(s) p5-48xlarge-spot[01-08] in State=CLOUD
# (p5.48xlarge, 8x H100). No instances here: slurm/aws-use1/resume.sh
# launches them from this launch template when jobs need them; suspend.sh terminates them.
resource "aws_launch_template" "p5_48xlarge_spot_slurm" {
  name = "${var.name_prefix}-p5-48xlarge-spot"

  image_id      = var.ami_id
  instance_type = "p5.48xlarge"
  key_name      = var.key_name

  placement {
    group_name = aws_placement_group.gpu.name
  }

  # 32 EFA network cards of 100 Gb/s; device index 0 on card 0 only.
  dynamic "network_interfaces" {
    for_each = range(32)
    content {
      network_card_index    = network_interfaces.value
      device_index          = network_interfaces.value == 0 ? 0 : 1
      interface_type        = "efa"
      subnet_id             = var.subnet_id
      security_groups       = [aws_security_group.efa.id]
      delete_on_termination = true
    }
  }

  instance_market_options {
    market_type = "spot"
    spot_options {
      instance_interruption_behavior = "terminate"
    }
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile.io/pool"    = "p5-48xlarge"
      "infra-compile.io/pricing" = "spot"
      "slurm-partition"          = "p5-48xlarge"
    }
  }
}

# Shared file system for datasets and checkpoints: 52.0 TB planned,
# rounded up to FSx for Lustre PERSISTENT_2 sizes (1200 GiB, 2400 GiB, then steps of 2400 GiB).
resource "aws_fsx_lustre_file_system" "shared" {
  storage_capacity            = 50400
  deployment_type             = "PERSISTENT_2"
  per_unit_storage_throughput = 250
  storage_type                = "SSD"
  data_compression_type       = "LZ4"
  subnet_ids                  = [var.subnet_id]
  security_group_ids          = [aws_security_group.efa.id]

  tags = {
    "Name"        = "${var.name_prefix}-shared"
    "mount-point" = "/fsx"
  }
}
