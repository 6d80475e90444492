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

variable "reserved_nodes" {
  description = "Nodes each capacity reservation holds in the month applied (set by months/NNN.tfvars; 0: it does not exist)."
  type        = map(number)
}

variable "nodes" {
  description = "Nodes of each fixed instance set and node group in the month applied (set by months/NNN.tfvars; a node group with 0 does not exist)."
  type        = map(number)
}
