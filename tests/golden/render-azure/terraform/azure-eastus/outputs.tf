output "resource_group" {
  description = "Resource group of the site's GPU capacity."
  value       = azurerm_resource_group.site.name
}

output "proximity_placement_group" {
  description = "Proximity placement group of the GPU nodes outside reservations."
  value       = azurerm_proximity_placement_group.gpu.id
}

output "standard_nd96amsr_a100_v4_spot_kubernetes_group" {
  description = "AKS node pool standard-nd96amsr-a100-v4-spot-k8s (2 to 2 x Standard_ND96amsr_A100_v4, spot; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nd96amsr_a100_v4_spot_kubernetes[*].name)
}

output "lustre_mgs_address" {
  description = "MGS address of the Managed Lustre file system (mount at /lustre)."
  value       = azurerm_managed_lustre_file_system.shared.mgs_address
}
