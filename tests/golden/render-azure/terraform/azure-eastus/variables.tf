variable "subscription_id" {
  description = "Azure subscription that hosts site azure-eastus."
  type        = string
}

variable "location" {
  description = "Azure region of site azure-eastus."
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
  default     = "azure-eastus"
}

variable "lustre_subnet_id" {
  description = "Dedicated subnet for Azure Managed Lustre (its size depends on the capacity)."
  type        = string
}

variable "aks_cluster_id" {
  description = "Resource id of the existing AKS cluster the GPU node pools join."
  type        = string
}

variable "nodes" {
  description = "Nodes of each fixed instance set and node group in the month applied (set by months/NNN.tfvars; a node group with 0 does not exist)."
  type        = map(number)
}
