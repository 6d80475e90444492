variable "subscription_id" {
  description = "Azure subscription that hosts site azure-eus."
  type        = string
}

variable "location" {
  description = "Azure region of site azure-eus."
  type        = string
  default     = "eastus"
}

variable "zone" {
  description = "Availability zone for the GPU nodes and the file system."
  type        = string
  default     = "1"
}

variable "name_prefix" {
  description = "Prefix for the names of every resource created here."
  type        = string
  default     = "azure-eus"
}

variable "aks_cluster_id" {
  description = "Resource id of the existing AKS cluster the GPU node pools join."
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
