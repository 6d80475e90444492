# GPU capacity for site aws-use1 as planned: 0 capacity reservation(s),
# 2 node set(s) (Slurm instances or launch templates, EKS node groups).
# Every node sits in one cluster placement group, with EFA interfaces where the instance has them.
# Nothing else here provisions GPU nodes; schedule/aws-use1.csv says who holds which, when.

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

# ---- Slurm p5-48xlarge, on_demand: 2 node(s) p5-48xlarge-od[01-02] in State=CLOUD
# (p5.48xlarge, 8x H100). No instances here: slurm/aws-use1/resume.sh
# launches them from this launch template when jobs need them; suspend.sh terminates them.
resource "aws_launch_template" "p5_48xlarge_on_demand_slurm" {
  name = "${var.name_prefix}-p5-48xlarge-on-demand"

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
      "infra-compile.io/pool"    = "p5-48xlarge"
      "infra-compile.io/pricing" = "on_demand"
      "slurm-partition"          = "p5-48xlarge"
    }
  }
}

# ---- Slurm p5en-48xlarge, spot: 42 node(s) p5en-48xlarge-spot[01-42] in State=CLOUD
# (p5en.48xlarge, 8x H200). No instances here: slurm/aws-use1/resume.sh
# launches them from this launch template when jobs need them; suspend.sh terminates them.
resource "aws_launch_template" "p5en_48xlarge_spot_slurm" {
  name = "${var.name_prefix}-p5en-48xlarge-spot"

  image_id      = var.ami_id
  instance_type = "p5en.48xlarge"
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
      "infra-compile.io/pool"    = "p5en-48xlarge"
      "infra-compile.io/pricing" = "spot"
      "slurm-partition"          = "p5en-48xlarge"
    }
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
