output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "p5_48xlarge_on_demand_slurm_template" {
  description = "Launch template slurm/aws-use1/resume.sh starts Slurm nodes p5-48xlarge-od[01-02] from (p5.48xlarge, on_demand)."
  value       = aws_launch_template.p5_48xlarge_on_demand_slurm.name
}

output "p5en_48xlarge_spot_slurm_template" {
  description = "Launch template slurm/aws-use1/resume.sh starts Slurm nodes p5en-48xlarge-spot[01-42] from (p5en.48xlarge, spot)."
  value       = aws_launch_template.p5en_48xlarge_spot_slurm.name
}

output "fsx_dns_name" {
  description = "DNS name of the FSx for Lustre file system (mount at /fsx)."
  value       = aws_fsx_lustre_file_system.shared.dns_name
}

output "fsx_mount_name" {
  description = "Lustre mount name of the file system."
  value       = aws_fsx_lustre_file_system.shared.mount_name
}
