# GPU capacity for site aws-use1 as planned: 4 capacity reservation(s),
# 6 node set(s) (Slurm instances or launch templates, EKS node groups).
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

# ---- reservation g6e-12xlarge-reserved-1y: up to 1 x g6e.12xlarge, reserved_1y, nodes g6e-12xlarge-r1y01,
# used by kubernetes. Terms: 1 node in months 10-21.
# It exists in the months its terms run, holding their nodes, and ends with the latest of them
# (months/NNN.tfvars). This holds the capacity; the reserved_1y discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform.
resource "aws_ec2_capacity_reservation" "g6e_12xlarge_reserved_1y" {
  count = var.reserved_nodes["g6e_12xlarge_reserved_1y"] > 0 ? 1 : 0

  instance_type           = "g6e.12xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = var.reserved_nodes["g6e_12xlarge_reserved_1y"]
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "limited"
  end_date                = local.end_dates["g6e_12xlarge_reserved_1y"]

  tags = {
    "Name"                     = "${var.name_prefix}-g6e-12xlarge-reserved-1y"
    "infra-compile.io/pool"    = "g6e-12xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }
}

# ---- reservation g6e-xlarge-reserved-1y: up to 1 x g6e.xlarge, reserved_1y, nodes g6e-xlarge-r1y01,
# used by kubernetes. Terms: 1 node in months 5-16.
# It exists in the months its terms run, holding their nodes, and ends with the latest of them
# (months/NNN.tfvars). This holds the capacity; the reserved_1y discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform.
resource "aws_ec2_capacity_reservation" "g6e_xlarge_reserved_1y" {
  count = var.reserved_nodes["g6e_xlarge_reserved_1y"] > 0 ? 1 : 0

  instance_type           = "g6e.xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = var.reserved_nodes["g6e_xlarge_reserved_1y"]
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "limited"
  end_date                = local.end_dates["g6e_xlarge_reserved_1y"]

  tags = {
    "Name"                     = "${var.name_prefix}-g6e-xlarge-reserved-1y"
    "infra-compile.io/pool"    = "g6e-xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }
}

# ---- reservation p5-48xlarge-reserved-1y: up to 1 x p5.48xlarge, reserved_1y, nodes p5-48xlarge-r1y01,
# used by kubernetes. Terms: 1 node in months 0-11.
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

# ---- reservation p5-4xlarge-reserved-1y: up to 2 x p5.4xlarge, reserved_1y, nodes p5-4xlarge-r1y[01-02],
# used by kubernetes. Terms: 2 nodes in months 3-14.
# It exists in the months its terms run, holding their nodes, and ends with the latest of them
# (months/NNN.tfvars). This holds the capacity; the reserved_1y discount itself is a
# Savings Plan or Reserved Instance bought on the account, outside Terraform.
resource "aws_ec2_capacity_reservation" "p5_4xlarge_reserved_1y" {
  count = var.reserved_nodes["p5_4xlarge_reserved_1y"] > 0 ? 1 : 0

  instance_type           = "p5.4xlarge"
  instance_platform       = "Linux/UNIX"
  availability_zone       = var.availability_zone
  instance_count          = var.reserved_nodes["p5_4xlarge_reserved_1y"]
  placement_group_arn     = aws_placement_group.gpu.arn
  instance_match_criteria = "targeted"
  end_date_type           = "limited"
  end_date                = local.end_dates["p5_4xlarge_reserved_1y"]

  tags = {
    "Name"                     = "${var.name_prefix}-p5-4xlarge-reserved-1y"
    "infra-compile.io/pool"    = "p5-4xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }
}

# ---- Kubernetes g6e-12xlarge, reserved_1y: EKS node group of 0 to 1 node(s) over the
# horizon (g6e.12xlarge, 4x L40S), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation g6e-12xlarge-reserved-1y.
resource "aws_launch_template" "g6e_12xlarge_reserved_1y_kubernetes" {
  name_prefix = "${var.name_prefix}-g6e-12xlarge-reserved-1y-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  network_interfaces {
    device_index          = 0
    security_groups       = [aws_security_group.efa.id]
    delete_on_termination = true
  }

  # Inside the reservation in the months it exists.
  dynamic "capacity_reservation_specification" {
    for_each = aws_ec2_capacity_reservation.g6e_12xlarge_reserved_1y
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
      "infra-compile.io/pool"    = "g6e-12xlarge"
      "infra-compile.io/pricing" = "reserved_1y"
    }
  }
}

resource "aws_eks_node_group" "g6e_12xlarge_reserved_1y_kubernetes" {
  count = var.nodes["g6e_12xlarge_reserved_1y_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-g6e-12xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["g6e.12xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["g6e_12xlarge_reserved_1y_kubernetes"]
    min_size     = var.nodes["g6e_12xlarge_reserved_1y_kubernetes"]
    max_size     = var.nodes["g6e_12xlarge_reserved_1y_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.g6e_12xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.g6e_12xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "g6e-12xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- Kubernetes g6e-12xlarge, on_demand: EKS node group of 0 to 1 node(s) over the
# horizon (g6e.12xlarge, 4x L40S), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "aws_launch_template" "g6e_12xlarge_on_demand_kubernetes" {
  name_prefix = "${var.name_prefix}-g6e-12xlarge-on-demand-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  network_interfaces {
    device_index          = 0
    security_groups       = [aws_security_group.efa.id]
    delete_on_termination = true
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile.io/pool"    = "g6e-12xlarge"
      "infra-compile.io/pricing" = "on_demand"
    }
  }
}

resource "aws_eks_node_group" "g6e_12xlarge_on_demand_kubernetes" {
  count = var.nodes["g6e_12xlarge_on_demand_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-g6e-12xlarge-on-demand-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["g6e.12xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["g6e_12xlarge_on_demand_kubernetes"]
    min_size     = var.nodes["g6e_12xlarge_on_demand_kubernetes"]
    max_size     = var.nodes["g6e_12xlarge_on_demand_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.g6e_12xlarge_on_demand_kubernetes.id
    version = aws_launch_template.g6e_12xlarge_on_demand_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "g6e-12xlarge"
    "infra-compile.io/pricing" = "on_demand"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- Kubernetes g6e-xlarge, reserved_1y: EKS node group of 0 to 1 node(s) over the
# horizon (g6e.xlarge, 1x L40S), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation g6e-xlarge-reserved-1y.
resource "aws_launch_template" "g6e_xlarge_reserved_1y_kubernetes" {
  name_prefix = "${var.name_prefix}-g6e-xlarge-reserved-1y-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  network_interfaces {
    device_index          = 0
    security_groups       = [aws_security_group.efa.id]
    delete_on_termination = true
  }

  # Inside the reservation in the months it exists.
  dynamic "capacity_reservation_specification" {
    for_each = aws_ec2_capacity_reservation.g6e_xlarge_reserved_1y
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
      "infra-compile.io/pool"    = "g6e-xlarge"
      "infra-compile.io/pricing" = "reserved_1y"
    }
  }
}

resource "aws_eks_node_group" "g6e_xlarge_reserved_1y_kubernetes" {
  count = var.nodes["g6e_xlarge_reserved_1y_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-g6e-xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["g6e.xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["g6e_xlarge_reserved_1y_kubernetes"]
    min_size     = var.nodes["g6e_xlarge_reserved_1y_kubernetes"]
    max_size     = var.nodes["g6e_xlarge_reserved_1y_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.g6e_xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.g6e_xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "g6e-xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- Kubernetes g6e-xlarge, on_demand: EKS node group of 0 to 3 node(s) over the
# horizon (g6e.xlarge, 1x L40S), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "aws_launch_template" "g6e_xlarge_on_demand_kubernetes" {
  name_prefix = "${var.name_prefix}-g6e-xlarge-on-demand-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  network_interfaces {
    device_index          = 0
    security_groups       = [aws_security_group.efa.id]
    delete_on_termination = true
  }

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile.io/pool"    = "g6e-xlarge"
      "infra-compile.io/pricing" = "on_demand"
    }
  }
}

resource "aws_eks_node_group" "g6e_xlarge_on_demand_kubernetes" {
  count = var.nodes["g6e_xlarge_on_demand_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-g6e-xlarge-on-demand-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["g6e.xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["g6e_xlarge_on_demand_kubernetes"]
    min_size     = var.nodes["g6e_xlarge_on_demand_kubernetes"]
    max_size     = var.nodes["g6e_xlarge_on_demand_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.g6e_xlarge_on_demand_kubernetes.id
    version = aws_launch_template.g6e_xlarge_on_demand_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "g6e-xlarge"
    "infra-compile.io/pricing" = "on_demand"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- Kubernetes p5-48xlarge, reserved_1y: EKS node group of 1 to 1 node(s) over the
# horizon (p5.48xlarge, 8x H100), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation p5-48xlarge-reserved-1y.
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
    }
  }
}

resource "aws_eks_node_group" "p5_48xlarge_reserved_1y_kubernetes" {
  count = var.nodes["p5_48xlarge_reserved_1y_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-p5-48xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["p5.48xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["p5_48xlarge_reserved_1y_kubernetes"]
    min_size     = var.nodes["p5_48xlarge_reserved_1y_kubernetes"]
    max_size     = var.nodes["p5_48xlarge_reserved_1y_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.p5_48xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.p5_48xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "p5-48xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# ---- Kubernetes p5-4xlarge, reserved_1y: EKS node group of 0 to 2 node(s) over the
# horizon (p5.4xlarge, 1x H100), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation p5-4xlarge-reserved-1y.
resource "aws_launch_template" "p5_4xlarge_reserved_1y_kubernetes" {
  name_prefix = "${var.name_prefix}-p5-4xlarge-reserved-1y-k8s-"

  placement {
    group_name = aws_placement_group.gpu.name
  }

  # 1 EFA network cards of 100 Gb/s; device index 0 on card 0 only.
  dynamic "network_interfaces" {
    for_each = range(1)
    content {
      network_card_index    = network_interfaces.value
      device_index          = network_interfaces.value == 0 ? 0 : 1
      interface_type        = "efa"
      security_groups       = [aws_security_group.efa.id]
      delete_on_termination = true
    }
  }

  # Inside the reservation in the months it exists.
  dynamic "capacity_reservation_specification" {
    for_each = aws_ec2_capacity_reservation.p5_4xlarge_reserved_1y
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
      "infra-compile.io/pool"    = "p5-4xlarge"
      "infra-compile.io/pricing" = "reserved_1y"
    }
  }
}

resource "aws_eks_node_group" "p5_4xlarge_reserved_1y_kubernetes" {
  count = var.nodes["p5_4xlarge_reserved_1y_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-p5-4xlarge-reserved-1y-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["p5.4xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["p5_4xlarge_reserved_1y_kubernetes"]
    min_size     = var.nodes["p5_4xlarge_reserved_1y_kubernetes"]
    max_size     = var.nodes["p5_4xlarge_reserved_1y_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.p5_4xlarge_reserved_1y_kubernetes.id
    version = aws_launch_template.p5_4xlarge_reserved_1y_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "p5-4xlarge"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}
