output "placement_policy" {
  description = "Compact placement policy of the GPU nodes."
  value       = google_compute_resource_policy.compact.id
}

output "a3_highgpu_8g_reserved_1y_reservation" {
  description = "Reservation of block a3-highgpu-8g-reserved-1y (up to 2 x a3-highgpu-8g, reserved_1y; null in months it holds none)."
  value       = one(google_compute_reservation.a3_highgpu_8g_reserved_1y[*].id)
}

output "a3_highgpu_8g_reserved_1y_kubernetes_group" {
  description = "GKE node pool a3-highgpu-8g-reserved-1y-k8s (2 to 2 x a3-highgpu-8g, reserved_1y; null in months it has no nodes)."
  value       = one(google_container_node_pool.a3_highgpu_8g_reserved_1y_kubernetes[*].name)
}

output "g2_standard_96_on_demand_kubernetes_group" {
  description = "GKE node pool g2-standard-96-on-demand-k8s (2 to 2 x g2-standard-96, on_demand; null in months it has no nodes)."
  value       = one(google_container_node_pool.g2_standard_96_on_demand_kubernetes[*].name)
}

output "filestore_ip" {
  description = "Filestore address (mount shared at /mnt/filestore)."
  value       = google_filestore_instance.shared.networks[0].ip_addresses[0]
}
