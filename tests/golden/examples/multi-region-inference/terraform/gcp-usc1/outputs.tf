output "placement_policy" {
  description = "Compact placement policy of the GPU nodes."
  value       = google_compute_resource_policy.compact.id
}

output "a3_ultragpu_8g_reserved_1y_kubernetes_nodes" {
  description = "GKE node pool of pool a3-ultragpu-8g-reserved-1y-k8s (1 x a3-ultragpu-8g)."
  value       = google_container_node_pool.a3_ultragpu_8g_reserved_1y_kubernetes.name
}

output "g2_standard_96_reserved_1y_kubernetes_nodes" {
  description = "GKE node pool of pool g2-standard-96-reserved-1y-k8s (4 x g2-standard-96)."
  value       = google_container_node_pool.g2_standard_96_reserved_1y_kubernetes.name
}
