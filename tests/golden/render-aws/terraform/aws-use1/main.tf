# GPU capacity for site aws-use1 as planned: 2 node group(s).
# Every node sits in one cluster placement group, with EFA interfaces where the instance has them.

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

# ---- pool p5-48xlarge-reserved-1y: 16 x p5.48xlarge (8x H100), reserved_1y, for slurm
# reserved_1y pricing: reserve the capacity in the zone (the discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform).
resource "aws_ec2_capacity_reservation" "p5_48xlarge_reserved_1y_slurm" {
  instance_type           = "p5.48xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = 16
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "unlimited"
}

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

  capacity_reservation_specification {
    capacity_reservation_target {
      capacity_reservation_id = aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y_slurm.id
    }
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile/pool" = "p5-48xlarge-reserved-1y"
    }
  }
}

resource "aws_autoscaling_group" "p5_48xlarge_reserved_1y_slurm" {
  name                = "${var.name_prefix}-p5-48xlarge-reserved-1y"
  min_size            = 16
  max_size            = 16
  desired_capacity    = 16
  vpc_zone_identifier = [var.subnet_id]
  placement_group     = aws_placement_group.gpu.id

  launch_template {
    id      = aws_launch_template.p5_48xlarge_reserved_1y_slurm.id
    version = aws_launch_template.p5_48xlarge_reserved_1y_slurm.latest_version
  }

  tag {
    key                 = "slurm-partition"
    value               = "p5-48xlarge-reserved-1y"
    propagate_at_launch = true
  }
}

# ---- pool p5-48xlarge-spot: 8 x p5.48xlarge (8x H100), spot, for slurm
resource "aws_launch_template" "p5_48xlarge_spot_slurm" {
  name_prefix = "${var.name_prefix}-p5-48xlarge-spot-"

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
      "infra-compile/pool" = "p5-48xlarge-spot"
    }
  }
}

resource "aws_autoscaling_group" "p5_48xlarge_spot_slurm" {
  name                = "${var.name_prefix}-p5-48xlarge-spot"
  min_size            = 8
  max_size            = 8
  desired_capacity    = 8
  vpc_zone_identifier = [var.subnet_id]
  placement_group     = aws_placement_group.gpu.id

  launch_template {
    id      = aws_launch_template.p5_48xlarge_spot_slurm.id
    version = aws_launch_template.p5_48xlarge_spot_slurm.latest_version
  }

  tag {
    key                 = "slurm-partition"
    value               = "p5-48xlarge-spot"
    propagate_at_launch = true
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
