output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "g6e_12xlarge_on_demand_kubernetes_group" {
  description = "EKS node group of pool g6e-12xlarge-on-demand-k8s (2 x g6e.12xlarge)."
  value       = aws_eks_node_group.g6e_12xlarge_on_demand_kubernetes.node_group_name
}

output "g6e_xlarge_on_demand_kubernetes_group" {
  description = "EKS node group of pool g6e-xlarge-on-demand-k8s (3 x g6e.xlarge)."
  value       = aws_eks_node_group.g6e_xlarge_on_demand_kubernetes.node_group_name
}

output "p5_48xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group of pool p5-48xlarge-reserved-1y-k8s (2 x p5.48xlarge)."
  value       = aws_eks_node_group.p5_48xlarge_reserved_1y_kubernetes.node_group_name
}

output "p5e_48xlarge_on_demand_kubernetes_group" {
  description = "EKS node group of pool p5e-48xlarge-on-demand-k8s (1 x p5e.48xlarge)."
  value       = aws_eks_node_group.p5e_48xlarge_on_demand_kubernetes.node_group_name
}
