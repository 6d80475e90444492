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
