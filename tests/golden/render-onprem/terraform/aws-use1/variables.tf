variable "region" {
  description = "AWS region of site aws-use1."
  type        = string
  default     = "us-east-1"
}

variable "name_prefix" {
  description = "Prefix for the names of every resource created here."
  type        = string
  default     = "aws-use1"
}

variable "vpc_id" {
  description = "VPC the GPU nodes and the file system live in."
  type        = string
}

variable "subnet_id" {
  description = "One private subnet (one Availability Zone: cluster placement groups and EFA do not span zones)."
  type        = string
}

variable "eks_cluster_name" {
  description = "Existing EKS cluster the GPU node groups join."
  type        = string
}

variable "node_role_arn" {
  description = "IAM role ARN of the EKS worker nodes."
  type        = string
}

variable "nodes" {
  description = "Nodes of each fixed instance set and node group in the month applied (set by months/NNN.tfvars; a node group with 0 does not exist)."
  type        = map(number)
}
