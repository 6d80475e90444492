output "resource_group" {
  description = "Resource group of the site's GPU capacity."
  value       = azurerm_resource_group.site.name
}

output "standard_nd96amsr_a100_v4_spot_kubernetes_nodes" {
  description = "AKS node pool of pool standard-nd96amsr-a100-v4-spot-k8s (2 x Standard_ND96amsr_A100_v4)."
  value       = azurerm_kubernetes_cluster_node_pool.standard_nd96amsr_a100_v4_spot_kubernetes.name
}

output "standard_nd96isr_h100_v5_on_demand_slurm_nodes" {
  description = "Scale set of pool standard-nd96isr-h100-v5-on-demand (12 x Standard_ND96isr_H100_v5)."
  value       = azurerm_linux_virtual_machine_scale_set.standard_nd96isr_h100_v5_on_demand_slurm.name
}

output "lustre_mgs_address" {
  description = "MGS address of the Managed Lustre file system (mount at /lustre)."
  value       = azurerm_managed_lustre_file_system.shared.mgs_address
}
