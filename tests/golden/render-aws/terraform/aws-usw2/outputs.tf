output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "g6e_48xlarge_on_demand_kubernetes_group" {
  description = "EKS node group g6e-48xlarge-on-demand-k8s (3 to 3 x g6e.48xlarge, on_demand; null in months it has no nodes)."
  value       = one(aws_eks_node_group.g6e_48xlarge_on_demand_kubernetes[*].node_group_name)
}

output "p4de_24xlarge_on_demand_kubernetes_group" {
  description = "EKS node group p4de-24xlarge-on-demand-k8s (4 to 4 x p4de.24xlarge, on_demand; null in months it has no nodes)."
  value       = one(aws_eks_node_group.p4de_24xlarge_on_demand_kubernetes[*].node_group_name)
}

output "fsx_dns_name" {
  description = "DNS name of the FSx for Lustre file system (mount at /fsx)."
  value       = aws_fsx_lustre_file_system.shared.dns_name
}

output "fsx_mount_name" {
  description = "Lustre mount name of the file system."
  value       = aws_fsx_lustre_file_system.shared.mount_name
}
