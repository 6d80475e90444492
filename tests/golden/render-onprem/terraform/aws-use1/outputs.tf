output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "p5_48xlarge_on_demand_kubernetes_group" {
  description = "EKS node group p5-48xlarge-on-demand-k8s (2 to 2 x p5.48xlarge, on_demand; null in months it has no nodes)."
  value       = one(aws_eks_node_group.p5_48xlarge_on_demand_kubernetes[*].node_group_name)
}

output "fsx_dns_name" {
  description = "DNS name of the FSx for Lustre file system (mount at /fsx)."
  value       = aws_fsx_lustre_file_system.shared.dns_name
}

output "fsx_mount_name" {
  description = "Lustre mount name of the file system."
  value       = aws_fsx_lustre_file_system.shared.mount_name
}
