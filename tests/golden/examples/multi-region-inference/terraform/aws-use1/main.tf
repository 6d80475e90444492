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

# ---- pool g6e-12xlarge-reserved-1y-k8s: 3 x g6e.12xlarge (4x L40S), reserved_1y, for kubernetes
# reserved_1y pricing: reserve the capacity in the zone (the discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform).
resource "aws_ec2_capacity_reservation" "g6e_12xlarge_reserved_1y_kubernetes" {
  instance_type           = "g6e.12xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = 3
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "unlimited"
}

resource "aws_launch_template" "g6e_12xlarge_reserved_1y_kubernetes" {
  name_prefix = "${var.name_prefix}-g6e-12xlarge-reserved-1y-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  network_interfaces {
    device_index          = 0
    subnet_id             = var.subnet_id
    security_groups       = [aws_security_group.efa.id]
    delete_on_termination = true
  }

  capacity_reservation_specification {
    capacity_reservation_target {
      capacity_reservation_id = aws_ec2_capacity_reservation.g6e_12xlarge_reserved_1y_kubernetes.id
    }
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile/pool" = "g6e-12xlarge-reserved-1y-k8s"
    }
  }
}

resource "aws_eks_node_group" "g6e_12xlarge_reserved_1y_kubernetes" {
  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-g6e-12xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["g6e.12xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = 3
    min_size     = 3
    max_size     = 3
  }

  launch_template {
    id      = aws_launch_template.g6e_12xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.g6e_12xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool" = "g6e-12xlarge-reserved-1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- pool p5-48xlarge-reserved-1y-k8s: 1 x p5.48xlarge (8x H100), reserved_1y, for kubernetes
# reserved_1y pricing: reserve the capacity in the zone (the discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform).
resource "aws_ec2_capacity_reservation" "p5_48xlarge_reserved_1y_kubernetes" {
  instance_type           = "p5.48xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = 1
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "unlimited"
}

resource "aws_launch_template" "p5_48xlarge_reserved_1y_kubernetes" {
  name_prefix = "${var.name_prefix}-p5-48xlarge-reserved-1y-k8s-"

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
      capacity_reservation_id = aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y_kubernetes.id
    }
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile/pool" = "p5-48xlarge-reserved-1y-k8s"
    }
  }
}

resource "aws_eks_node_group" "p5_48xlarge_reserved_1y_kubernetes" {
  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-p5-48xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["p5.48xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = 1
    min_size     = 1
    max_size     = 1
  }

  launch_template {
    id      = aws_launch_template.p5_48xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.p5_48xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool" = "p5-48xlarge-reserved-1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}
