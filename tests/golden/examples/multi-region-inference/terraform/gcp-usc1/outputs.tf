output "placement_policy" {
  description = "Compact placement policy of the GPU nodes."
  value       = google_compute_resource_policy.compact.id
}

output "a3_ultragpu_8g_reserved_1y_reservation" {
  description = "Reservation of block a3-ultragpu-8g-reserved-1y (up to 1 x a3-ultragpu-8g, reserved_1y; null in months it holds none)."
  value       = one(google_compute_reservation.a3_ultragpu_8g_reserved_1y[*].id)
}

output "g2_standard_96_reserved_1y_reservation" {
  description = "Reservation of block g2-standard-96-reserved-1y (up to 4 x g2-standard-96, reserved_1y; null in months it holds none)."
  value       = one(google_compute_reservation.g2_standard_96_reserved_1y[*].id)
}

output "a3_ultragpu_8g_reserved_1y_kubernetes_group" {
  description = "GKE node pool a3-ultragpu-8g-reserved-1y-k8s (1 to 1 x a3-ultragpu-8g, reserved_1y; null in months it has no nodes)."
  value       = one(google_container_node_pool.a3_ultragpu_8g_reserved_1y_kubernetes[*].name)
}

output "g2_standard_96_reserved_1y_kubernetes_group" {
  description = "GKE node pool g2-standard-96-reserved-1y-k8s (0 to 4 x g2-standard-96, reserved_1y; null in months it has no nodes)."
  value       = one(google_container_node_pool.g2_standard_96_reserved_1y_kubernetes[*].name)
}

output "g2_standard_96_on_demand_kubernetes_group" {
  description = "GKE node pool g2-standard-96-on-demand-k8s (0 to 1 x g2-standard-96, on_demand; null in months it has no nodes)."
  value       = one(google_container_node_pool.g2_standard_96_on_demand_kubernetes[*].name)
}
