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

variable "availability_zone" {
  description = "Availability Zone of subnet_id (capacity reservations are zonal)."
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

variable "plan_start" {
  description = "Month 0 of the plan (YYYY-MM, UTC): each capacity reservation ends on the first day of a month counted from it."
  type        = string

  validation {
    condition     = can(regex("^[0-9]{4}-(0[1-9]|1[0-2])$", var.plan_start))
    error_message = "The plan_start value must be a month as YYYY-MM."
  }
}

variable "reserved_nodes" {
  description = "Nodes each capacity reservation holds in the month applied (set by months/NNN.tfvars; 0: it does not exist)."
  type        = map(number)
}

variable "reservation_end_month" {
  description = "The plan month each capacity reservation ends on: the end of the latest term running in the month applied (set by months/NNN.tfvars)."
  type        = map(number)
}

variable "nodes" {
  description = "Nodes of each fixed instance set and node group in the month applied (set by months/NNN.tfvars; a node group with 0 does not exist)."
  type        = map(number)
}
