variable "project_id" {
  description = "GCP project that hosts site gcp-usc1."
  type        = string
}

variable "region" {
  description = "GCP region of site gcp-usc1."
  type        = string
  default     = "us-central1"
}

variable "zone" {
  description = "Zone for the GPU nodes (compact placement keeps them in one zone)."
  type        = string
}

variable "name_prefix" {
  description = "Prefix for the names of every resource created here."
  type        = string
  default     = "gcp-usc1"
}

variable "network" {
  description = "VPC network for the Slurm nodes' first interface and the file system."
  type        = string
}

variable "subnetwork" {
  description = "Subnetwork of the Slurm nodes' first interface."
  type        = string
}

variable "image" {
  description = "Boot image for the Slurm nodes (e.g. a Cluster Toolkit Slurm image with the GPU driver)."
  type        = string
}

variable "service_account_email" {
  description = "Service account the GPU VMs run as."
  type        = string
}
