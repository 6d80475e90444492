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

# ---- pool p5-48xlarge-on-demand: 2 x p5.48xlarge (8x H100), on_demand, for slurm
resource "aws_launch_template" "p5_48xlarge_on_demand_slurm" {
  name_prefix = "${var.name_prefix}-p5-48xlarge-on-demand-"

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

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile/pool" = "p5-48xlarge-on-demand"
    }
  }
}

resource "aws_autoscaling_group" "p5_48xlarge_on_demand_slurm" {
  name                = "${var.name_prefix}-p5-48xlarge-on-demand"
  min_size            = 2
  max_size            = 2
  desired_capacity    = 2
  vpc_zone_identifier = [var.subnet_id]
  placement_group     = aws_placement_group.gpu.id

  launch_template {
    id      = aws_launch_template.p5_48xlarge_on_demand_slurm.id
    version = aws_launch_template.p5_48xlarge_on_demand_slurm.latest_version
  }

  tag {
    key                 = "slurm-partition"
    value               = "p5-48xlarge-on-demand"
    propagate_at_launch = true
  }
}

# ---- pool p5-48xlarge-spot: 40 x p5.48xlarge (8x H100), spot, for slurm
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
  min_size            = 40
  max_size            = 40
  desired_capacity    = 40
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

# Shared file system for datasets and checkpoints: 50.029 TB planned,
# rounded up to FSx for Lustre PERSISTENT_2 sizes (1200 GiB, 2400 GiB, then steps of 2400 GiB).
resource "aws_fsx_lustre_file_system" "shared" {
  storage_capacity            = 48000
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
