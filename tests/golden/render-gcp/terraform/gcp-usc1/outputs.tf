output "placement_policy" {
  description = "Compact placement policy of the GPU nodes."
  value       = google_compute_resource_policy.compact.id
}

output "a3_megagpu_8g_spot_slurm_template" {
  description = "Instance template slurm/gcp-usc1/resume.sh creates Slurm nodes a3-megagpu-8g-spot[01-08] from (a3-megagpu-8g, spot)."
  value       = google_compute_instance_template.a3_megagpu_8g_spot_slurm.name
}

output "parallelstore_access_points" {
  description = "Parallelstore access points (mount at /mnt/parallelstore)."
  value       = google_parallelstore_instance.shared.access_points
}
