output "placement_group" {
  description = "Cluster placement group holding every GPU node of the site."
  value       = aws_placement_group.gpu.name
}

output "g6e_12xlarge_reserved_1y_reservation" {
  description = "Capacity reservation of block g6e-12xlarge-reserved-1y (up to 1 x g6e.12xlarge, reserved_1y; null in months it holds none)."
  value       = one(aws_ec2_capacity_reservation.g6e_12xlarge_reserved_1y[*].id)
}

output "g6e_xlarge_reserved_1y_reservation" {
  description = "Capacity reservation of block g6e-xlarge-reserved-1y (up to 1 x g6e.xlarge, reserved_1y; null in months it holds none)."
  value       = one(aws_ec2_capacity_reservation.g6e_xlarge_reserved_1y[*].id)
}

output "p5_48xlarge_reserved_1y_reservation" {
  description = "Capacity reservation of block p5-48xlarge-reserved-1y (up to 1 x p5.48xlarge, reserved_1y; null in months it holds none)."
  value       = one(aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y[*].id)
}

output "p5_4xlarge_reserved_1y_reservation" {
  description = "Capacity reservation of block p5-4xlarge-reserved-1y (up to 2 x p5.4xlarge, reserved_1y; null in months it holds none)."
  value       = one(aws_ec2_capacity_reservation.p5_4xlarge_reserved_1y[*].id)
}

output "g6e_12xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group g6e-12xlarge-reserved-1y-k8s (0 to 1 x g6e.12xlarge, reserved_1y; null in months it has no nodes)."
  value       = one(aws_eks_node_group.g6e_12xlarge_reserved_1y_kubernetes[*].node_group_name)
}

output "g6e_12xlarge_on_demand_kubernetes_group" {
  description = "EKS node group g6e-12xlarge-on-demand-k8s (0 to 1 x g6e.12xlarge, on_demand; null in months it has no nodes)."
  value       = one(aws_eks_node_group.g6e_12xlarge_on_demand_kubernetes[*].node_group_name)
}

output "g6e_xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group g6e-xlarge-reserved-1y-k8s (0 to 1 x g6e.xlarge, reserved_1y; null in months it has no nodes)."
  value       = one(aws_eks_node_group.g6e_xlarge_reserved_1y_kubernetes[*].node_group_name)
}

output "g6e_xlarge_on_demand_kubernetes_group" {
  description = "EKS node group g6e-xlarge-on-demand-k8s (0 to 3 x g6e.xlarge, on_demand; null in months it has no nodes)."
  value       = one(aws_eks_node_group.g6e_xlarge_on_demand_kubernetes[*].node_group_name)
}

output "p5_48xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group p5-48xlarge-reserved-1y-k8s (1 to 1 x p5.48xlarge, reserved_1y; null in months it has no nodes)."
  value       = one(aws_eks_node_group.p5_48xlarge_reserved_1y_kubernetes[*].node_group_name)
}

output "p5_4xlarge_reserved_1y_kubernetes_group" {
  description = "EKS node group p5-4xlarge-reserved-1y-k8s (0 to 2 x p5.4xlarge, reserved_1y; null in months it has no nodes)."
  value       = one(aws_eks_node_group.p5_4xlarge_reserved_1y_kubernetes[*].node_group_name)
}
