# GPU capacity for site azure-eus as planned: 2 node group(s).
# ND-series VMs bring their InfiniBand HCAs with them; nodes of one scale set in a single
# placement group share one InfiniBand fabric.

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

# ---- pool standard-nd96amsr-a100-v4-reserved-1y-k8s: 1 x Standard_ND96amsr_A100_v4 (8x A100-80GB), reserved_1y, for kubernetes
# reserved_1y: an on-demand capacity reservation holds the VMs (the reservation
# discount is bought on the billing account). Reserved VMs cannot join a proximity
# placement group; the scale set's single placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nd96amsr_a100_v4_reserved_1y_kubernetes" {
  name                = "${var.name_prefix}-standard-nd96amsr-a100-v4-reserved-1y-k8s"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nd96amsr_a100_v4_reserved_1y_kubernetes" {
  name                          = "${var.name_prefix}-standard-nd96amsr-a100-v4-reserved-1y-k8s"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96amsr_a100_v4_reserved_1y_kubernetes.id
  zone                          = var.zone

  sku {
    name     = "Standard_ND96amsr_A100_v4"
    capacity = 1
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96amsr_a100_v4_reserved_1y_kubernetes" {
  name                  = "gpu1k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96amsr_A100_v4"
  node_count            = 1
  zones                 = [var.zone]
  os_sku                = "Ubuntu"

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96amsr_a100_v4_reserved_1y_kubernetes.id

  node_labels = {
    "infra-compile.io/pool" = "standard-nd96amsr-a100-v4-reserved-1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- pool standard-nd96isr-h100-v5-reserved-1y-k8s: 1 x Standard_ND96isr_H100_v5 (8x H100), reserved_1y, for kubernetes
# reserved_1y: an on-demand capacity reservation holds the VMs (the reservation
# discount is bought on the billing account). Reserved VMs cannot join a proximity
# placement group; the scale set's single placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nd96isr_h100_v5_reserved_1y_kubernetes" {
  name                = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y-k8s"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nd96isr_h100_v5_reserved_1y_kubernetes" {
  name                          = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y-k8s"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y_kubernetes.id
  zone                          = var.zone

  sku {
    name     = "Standard_ND96isr_H100_v5"
    capacity = 1
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96isr_h100_v5_reserved_1y_kubernetes" {
  name                  = "gpu2k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96isr_H100_v5"
  node_count            = 1
  zones                 = [var.zone]
  os_sku                = "Ubuntu"

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y_kubernetes.id

  node_labels = {
    "infra-compile.io/pool" = "standard-nd96isr-h100-v5-reserved-1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}
