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

variable "gke_cluster" {
  description = "Existing GKE cluster (name or id) the GPU node pools join."
  type        = string
}
