output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "p5_48xlarge_reserved_1y_reservation" {
  description = "Capacity reservation of block p5-48xlarge-reserved-1y (up to 16 x p5.48xlarge, reserved_1y; null in months it holds none)."
  value       = one(aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y[*].id)
}

output "p5_48xlarge_reserved_1y_slurm_group" {
  description = "Auto Scaling group of Slurm nodes p5-48xlarge-r1y[01-16] (16 x p5.48xlarge, reserved_1y)."
  value       = aws_autoscaling_group.p5_48xlarge_reserved_1y_slurm.name
}

output "p5_48xlarge_spot_slurm_template" {
  description = "Launch template slurm/aws-use1/resume.sh starts Slurm nodes p5-48xlarge-spot[01-08] from (p5.48xlarge, spot)."
  value       = aws_launch_template.p5_48xlarge_spot_slurm.name
}

output "fsx_dns_name" {
  description = "DNS name of the FSx for Lustre file system (mount at /fsx)."
  value       = aws_fsx_lustre_file_system.shared.dns_name
}

output "fsx_mount_name" {
  description = "Lustre mount name of the file system."
  value       = aws_fsx_lustre_file_system.shared.mount_name
}
