output "placement_policy" {
  description = "Compact placement policy of the GPU nodes."
  value       = google_compute_resource_policy.compact.id
}

output "a3_megagpu_8g_spot_slurm_nodes" {
  description = "VM names of pool a3-megagpu-8g-spot (8 x a3-megagpu-8g)."
  value       = google_compute_instance.a3_megagpu_8g_spot_slurm[*].name
}

output "parallelstore_access_points" {
  description = "Parallelstore access points (mount at /mnt/parallelstore)."
  value       = google_parallelstore_instance.shared.access_points
}
