# GPU capacity for site aws-use1 as planned: 0 capacity reservation(s),
# 1 node set(s) (Slurm instances or launch templates, EKS node groups).
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

# ---- Kubernetes p5-48xlarge, on_demand: EKS node group of 2 to 2 node(s) over the
# horizon (p5.48xlarge, 8x H100), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "aws_launch_template" "p5_48xlarge_on_demand_kubernetes" {
  name_prefix = "${var.name_prefix}-p5-48xlarge-on-demand-k8s-"

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

  metadata_options {
    http_tokens = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags = {
      "infra-compile.io/pool"    = "p5-48xlarge"
      "infra-compile.io/pricing" = "on_demand"
    }
  }
}

resource "aws_eks_node_group" "p5_48xlarge_on_demand_kubernetes" {
  count = var.nodes["p5_48xlarge_on_demand_kubernetes"] > 0 ? 1 : 0

  cluster_name    = var.eks_cluster_name
  node_group_name = "${var.name_prefix}-p5-48xlarge-on-demand-k8s"
  node_role_arn   = var.node_role_arn
  subnet_ids      = [var.subnet_id]
  instance_types  = ["p5.48xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"
  capacity_type   = "ON_DEMAND"

  scaling_config {
    desired_size = var.nodes["p5_48xlarge_on_demand_kubernetes"]
    min_size     = var.nodes["p5_48xlarge_on_demand_kubernetes"]
    max_size     = var.nodes["p5_48xlarge_on_demand_kubernetes"]
  }

  launch_template {
    id      = aws_launch_template.p5_48xlarge_on_demand_kubernetes.id
    version = aws_launch_template.p5_48xlarge_on_demand_kubernetes.latest_version
  }

  labels = {
    "infra-compile.io/pool"    = "p5-48xlarge"
    "infra-compile.io/pricing" = "on_demand"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# Shared file system for datasets and checkpoints: 1.0 TB planned,
# rounded up to FSx for Lustre PERSISTENT_2 sizes (1200 GiB, 2400 GiB, then steps of 2400 GiB).
resource "aws_fsx_lustre_file_system" "shared" {
  storage_capacity            = 1200
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
