output "resource_group" {
  description = "Resource group of the site's GPU capacity."
  value       = azurerm_resource_group.site.name
}

output "standard_nd96amsr_a100_v4_reserved_1y_kubernetes_nodes" {
  description = "AKS node pool of pool standard-nd96amsr-a100-v4-reserved-1y-k8s (1 x Standard_ND96amsr_A100_v4)."
  value       = azurerm_kubernetes_cluster_node_pool.standard_nd96amsr_a100_v4_reserved_1y_kubernetes.name
}

output "standard_nd96isr_h100_v5_reserved_1y_kubernetes_nodes" {
  description = "AKS node pool of pool standard-nd96isr-h100-v5-reserved-1y-k8s (1 x Standard_ND96isr_H100_v5)."
  value       = azurerm_kubernetes_cluster_node_pool.standard_nd96isr_h100_v5_reserved_1y_kubernetes.name
}
