output "resource_group" {
  description = "Resource group of the site's GPU capacity."
  value       = azurerm_resource_group.site.name
}

output "proximity_placement_group" {
  description = "Proximity placement group of the GPU nodes outside reservations."
  value       = azurerm_proximity_placement_group.gpu.id
}

output "standard_nc24ads_a100_v4_reserved_1y_reservation" {
  description = "Capacity reservation of block standard-nc24ads-a100-v4-reserved-1y (up to 3 x Standard_NC24ads_A100_v4, reserved_1y; null in months it holds none)."
  value       = one(azurerm_capacity_reservation.standard_nc24ads_a100_v4_reserved_1y[*].id)
}

output "standard_nc24ads_a100_v4_reserved_1y_reservation_group" {
  description = "Capacity reservation group of block standard-nc24ads-a100-v4-reserved-1y (VMs name it to start inside the reservation)."
  value       = azurerm_capacity_reservation_group.standard_nc24ads_a100_v4_reserved_1y.id
}

output "standard_nc96ads_a100_v4_reserved_1y_reservation" {
  description = "Capacity reservation of block standard-nc96ads-a100-v4-reserved-1y (up to 2 x Standard_NC96ads_A100_v4, reserved_1y; null in months it holds none)."
  value       = one(azurerm_capacity_reservation.standard_nc96ads_a100_v4_reserved_1y[*].id)
}

output "standard_nc96ads_a100_v4_reserved_1y_reservation_group" {
  description = "Capacity reservation group of block standard-nc96ads-a100-v4-reserved-1y (VMs name it to start inside the reservation)."
  value       = azurerm_capacity_reservation_group.standard_nc96ads_a100_v4_reserved_1y.id
}

output "standard_nd96isr_h100_v5_reserved_1y_reservation" {
  description = "Capacity reservation of block standard-nd96isr-h100-v5-reserved-1y (up to 1 x Standard_ND96isr_H100_v5, reserved_1y; null in months it holds none)."
  value       = one(azurerm_capacity_reservation.standard_nd96isr_h100_v5_reserved_1y[*].id)
}

output "standard_nd96isr_h100_v5_reserved_1y_reservation_group" {
  description = "Capacity reservation group of block standard-nd96isr-h100-v5-reserved-1y (VMs name it to start inside the reservation)."
  value       = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y.id
}

output "standard_nc24ads_a100_v4_reserved_1y_kubernetes_group" {
  description = "AKS node pool standard-nc24ads-a100-v4-reserved-1y-k8s (0 to 3 x Standard_NC24ads_A100_v4, reserved_1y; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nc24ads_a100_v4_reserved_1y_kubernetes[*].name)
}

output "standard_nc24ads_a100_v4_on_demand_kubernetes_group" {
  description = "AKS node pool standard-nc24ads-a100-v4-on-demand-k8s (0 to 5 x Standard_NC24ads_A100_v4, on_demand; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nc24ads_a100_v4_on_demand_kubernetes[*].name)
}

output "standard_nc96ads_a100_v4_reserved_1y_kubernetes_group" {
  description = "AKS node pool standard-nc96ads-a100-v4-reserved-1y-k8s (0 to 2 x Standard_NC96ads_A100_v4, reserved_1y; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nc96ads_a100_v4_reserved_1y_kubernetes[*].name)
}

output "standard_nc96ads_a100_v4_on_demand_kubernetes_group" {
  description = "AKS node pool standard-nc96ads-a100-v4-on-demand-k8s (0 to 1 x Standard_NC96ads_A100_v4, on_demand; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nc96ads_a100_v4_on_demand_kubernetes[*].name)
}

output "standard_nd96amsr_a100_v4_on_demand_kubernetes_group" {
  description = "AKS node pool standard-nd96amsr-a100-v4-on-demand-k8s (0 to 1 x Standard_ND96amsr_A100_v4, on_demand; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nd96amsr_a100_v4_on_demand_kubernetes[*].name)
}

output "standard_nd96isr_h100_v5_reserved_1y_kubernetes_group" {
  description = "AKS node pool standard-nd96isr-h100-v5-reserved-1y-k8s (0 to 1 x Standard_ND96isr_H100_v5, reserved_1y; null in months it has no nodes)."
  value       = one(azurerm_kubernetes_cluster_node_pool.standard_nd96isr_h100_v5_reserved_1y_kubernetes[*].name)
}
