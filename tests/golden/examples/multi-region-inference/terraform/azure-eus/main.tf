# GPU capacity for site azure-eus as planned: 2 capacity reservation(s),
# 2 node set(s) (Slurm scale sets or Resume-created VMs, AKS node pools).
# ND-series VMs bring their InfiniBand HCAs with them; nodes of one scale set in a single
# placement group share one InfiniBand fabric.
# Nothing else here provisions GPU nodes; schedule/azure-eus.csv says who holds which, when.

resource "azurerm_resource_group" "site" {
  name     = "${var.name_prefix}-rg"
  location = var.location
}

resource "azurerm_proximity_placement_group" "gpu" {
  name                = "${var.name_prefix}-ppg"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zone                = var.zone
}

# ---- reservation standard-nd96amsr-a100-v4-reserved-1y: 2 x Standard_ND96amsr_A100_v4, reserved_1y, nodes standard-nd96amsr-a100-v4-r1y[01-02],
# used by kubernetes. An on-demand capacity reservation holds the VMs (the
# reservation discount is bought on the billing account). Reserved VMs cannot join a proximity
# placement group; the scale set's single placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nd96amsr_a100_v4_reserved_1y" {
  name                = "${var.name_prefix}-standard-nd96amsr-a100-v4-reserved-1y"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nd96amsr_a100_v4_reserved_1y" {
  name                          = "${var.name_prefix}-standard-nd96amsr-a100-v4-reserved-1y"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96amsr_a100_v4_reserved_1y.id
  zone                          = var.zone

  sku {
    name     = "Standard_ND96amsr_A100_v4"
    capacity = 2
  }
}

# ---- reservation standard-nd96isr-h100-v5-reserved-1y: 1 x Standard_ND96isr_H100_v5, reserved_1y, nodes standard-nd96isr-h100-v5-r1y01,
# used by kubernetes. An on-demand capacity reservation holds the VMs (the
# reservation discount is bought on the billing account). Reserved VMs cannot join a proximity
# placement group; the scale set's single placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nd96isr_h100_v5_reserved_1y" {
  name                = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nd96isr_h100_v5_reserved_1y" {
  name                          = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y.id
  zone                          = var.zone

  sku {
    name     = "Standard_ND96isr_H100_v5"
    capacity = 1
  }
}

# ---- Kubernetes standard-nd96amsr-a100-v4, reserved_1y: AKS node pool of 2 to 2 node(s)
# (Standard_ND96amsr_A100_v4, 8x A100-80GB), fixed size.
# The nodes start inside reservation standard-nd96amsr-a100-v4-reserved-1y.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96amsr_a100_v4_reserved_1y_kubernetes" {
  name                  = "gpu1k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96amsr_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = 2

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96amsr_a100_v4_reserved_1y.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nd96amsr-a100-v4"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- Kubernetes standard-nd96isr-h100-v5, reserved_1y: AKS node pool of 1 to 1 node(s)
# (Standard_ND96isr_H100_v5, 8x H100), fixed size.
# The nodes start inside reservation standard-nd96isr-h100-v5-reserved-1y.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96isr_h100_v5_reserved_1y_kubernetes" {
  name                  = "gpu2k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96isr_H100_v5"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = 1

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nd96isr-h100-v5"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}
