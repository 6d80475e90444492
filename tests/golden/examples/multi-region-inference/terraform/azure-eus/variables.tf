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
