variable "project_id" {
  description = "GCP project that hosts site gcp-euw4."
  type        = string
}

variable "region" {
  description = "GCP region of site gcp-euw4."
  type        = string
  default     = "europe-west4"
}

variable "zone" {
  description = "Zone for the GPU nodes (compact placement keeps them in one zone)."
  type        = string
}

variable "name_prefix" {
  description = "Prefix for the names of every resource created here."
  type        = string
  default     = "gcp-euw4"
}

variable "network" {
  description = "VPC network for the Slurm nodes' first interface and the file system."
  type        = string
}

variable "gke_cluster" {
  description = "Existing GKE cluster (name or id) the GPU node pools join."
  type        = string
}

variable "reserved_nodes" {
  description = "Nodes each capacity reservation holds in the month applied (set by months/NNN.tfvars; 0: it does not exist)."
  type        = map(number)
}

variable "nodes" {
  description = "Nodes of each fixed instance set and node group in the month applied (set by months/NNN.tfvars; a node group with 0 does not exist)."
  type        = map(number)
}
