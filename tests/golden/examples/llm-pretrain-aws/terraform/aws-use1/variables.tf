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

variable "ami_id" {
  description = "GPU AMI for the Slurm nodes (e.g. an AWS Deep Learning AMI with the EFA installer and Slurm)."
  type        = string
}

variable "key_name" {
  description = "EC2 key pair for SSH access; null for none."
  type        = string
  default     = null
}
