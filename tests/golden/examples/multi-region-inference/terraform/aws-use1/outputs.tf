output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "p5_48xlarge_on_demand_kubernetes_group" {
  description = "EKS node group of pool p5-48xlarge-on-demand-k8s (1 x p5.48xlarge)."
  value       = aws_eks_node_group.p5_48xlarge_on_demand_kubernetes.node_group_name
}

output "p5_48xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group of pool p5-48xlarge-reserved-1y-k8s (1 x p5.48xlarge)."
  value       = aws_eks_node_group.p5_48xlarge_reserved_1y_kubernetes.node_group_name
}
