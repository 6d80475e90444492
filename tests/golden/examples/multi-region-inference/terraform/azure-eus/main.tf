# GPU capacity for site azure-eus as planned: 3 capacity reservation(s),
# 6 node set(s) (Slurm scale sets or Resume-created VMs, AKS node pools).
# ND-series VMs bring their InfiniBand HCAs with them; nodes of one scale set in a single
# placement group share one InfiniBand fabric.
# Nothing else here provisions GPU nodes; schedule/azure-eus.csv says who holds which, when.
# Apply it month by month: months/NNN.tfvars sets the counts of each month (RUNBOOK.md).

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

# ---- reservation standard-nc24ads-a100-v4-reserved-1y: up to 3 x Standard_NC24ads_A100_v4, reserved_1y, nodes standard-nc24ads-a100-v4-r1y[01-03],
# used by kubernetes. Terms: 1 node in months 5-16; 1 node in months 6-17; 1 node in months 7-18.
# The reservation exists in the months its terms run, holding their nodes: a term ends with the
# month's file dropping its nodes (months/NNN.tfvars); the group holding it costs nothing and stays.
# An on-demand capacity reservation holds the VMs (the reservation discount is bought on the
# billing account). Reserved VMs cannot join a proximity placement group; the scale set's single
# placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nc24ads_a100_v4_reserved_1y" {
  name                = "${var.name_prefix}-standard-nc24ads-a100-v4-reserved-1y"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nc24ads_a100_v4_reserved_1y" {
  count = var.reserved_nodes["standard_nc24ads_a100_v4_reserved_1y"] > 0 ? 1 : 0

  name                          = "${var.name_prefix}-standard-nc24ads-a100-v4-reserved-1y"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nc24ads_a100_v4_reserved_1y.id
  zone                          = var.zone

  sku {
    name     = "Standard_NC24ads_A100_v4"
    capacity = var.reserved_nodes["standard_nc24ads_a100_v4_reserved_1y"]
  }
}

# ---- reservation standard-nc96ads-a100-v4-reserved-1y: up to 2 x Standard_NC96ads_A100_v4, reserved_1y, nodes standard-nc96ads-a100-v4-r1y[01-02],
# used by kubernetes. Terms: 1 node in months 6-17; 1 node in months 10-21.
# The reservation exists in the months its terms run, holding their nodes: a term ends with the
# month's file dropping its nodes (months/NNN.tfvars); the group holding it costs nothing and stays.
# An on-demand capacity reservation holds the VMs (the reservation discount is bought on the
# billing account). Reserved VMs cannot join a proximity placement group; the scale set's single
# placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nc96ads_a100_v4_reserved_1y" {
  name                = "${var.name_prefix}-standard-nc96ads-a100-v4-reserved-1y"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nc96ads_a100_v4_reserved_1y" {
  count = var.reserved_nodes["standard_nc96ads_a100_v4_reserved_1y"] > 0 ? 1 : 0

  name                          = "${var.name_prefix}-standard-nc96ads-a100-v4-reserved-1y"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nc96ads_a100_v4_reserved_1y.id
  zone                          = var.zone

  sku {
    name     = "Standard_NC96ads_A100_v4"
    capacity = var.reserved_nodes["standard_nc96ads_a100_v4_reserved_1y"]
  }
}

# ---- reservation standard-nd96isr-h100-v5-reserved-1y: up to 1 x Standard_ND96isr_H100_v5, reserved_1y, nodes standard-nd96isr-h100-v5-r1y01,
# used by kubernetes. Terms: 1 node in months 1-12.
# The reservation exists in the months its terms run, holding their nodes: a term ends with the
# month's file dropping its nodes (months/NNN.tfvars); the group holding it costs nothing and stays.
# An on-demand capacity reservation holds the VMs (the reservation discount is bought on the
# billing account). Reserved VMs cannot join a proximity placement group; the scale set's single
# placement group keeps them on one fabric.
resource "azurerm_capacity_reservation_group" "standard_nd96isr_h100_v5_reserved_1y" {
  name                = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y"
  location            = azurerm_resource_group.site.location
  resource_group_name = azurerm_resource_group.site.name
  zones               = [var.zone]
}

resource "azurerm_capacity_reservation" "standard_nd96isr_h100_v5_reserved_1y" {
  count = var.reserved_nodes["standard_nd96isr_h100_v5_reserved_1y"] > 0 ? 1 : 0

  name                          = "${var.name_prefix}-standard-nd96isr-h100-v5-reserved-1y"
  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y.id
  zone                          = var.zone

  sku {
    name     = "Standard_ND96isr_H100_v5"
    capacity = var.reserved_nodes["standard_nd96isr_h100_v5_reserved_1y"]
  }
}

# ---- Kubernetes standard-nc24ads-a100-v4, reserved_1y: AKS node pool of 0 to 3 node(s) over the
# horizon (Standard_NC24ads_A100_v4, 1x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation standard-nc24ads-a100-v4-reserved-1y.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nc24ads_a100_v4_reserved_1y_kubernetes" {
  count = var.nodes["standard_nc24ads_a100_v4_reserved_1y_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu1k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_NC24ads_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nc24ads_a100_v4_reserved_1y_kubernetes"]

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nc24ads_a100_v4_reserved_1y.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nc24ads-a100-v4"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]

  # Its VMs start inside the reservation, which must exist first.
  depends_on = [azurerm_capacity_reservation.standard_nc24ads_a100_v4_reserved_1y]
}

# ---- Kubernetes standard-nc24ads-a100-v4, on_demand: AKS node pool of 0 to 5 node(s) over the
# horizon (Standard_NC24ads_A100_v4, 1x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nc24ads_a100_v4_on_demand_kubernetes" {
  count = var.nodes["standard_nc24ads_a100_v4_on_demand_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu2k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_NC24ads_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nc24ads_a100_v4_on_demand_kubernetes"]

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nc24ads-a100-v4"
    "infra-compile.io/pricing" = "on_demand"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- Kubernetes standard-nc96ads-a100-v4, reserved_1y: AKS node pool of 0 to 2 node(s) over the
# horizon (Standard_NC96ads_A100_v4, 4x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation standard-nc96ads-a100-v4-reserved-1y.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nc96ads_a100_v4_reserved_1y_kubernetes" {
  count = var.nodes["standard_nc96ads_a100_v4_reserved_1y_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu3k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_NC96ads_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nc96ads_a100_v4_reserved_1y_kubernetes"]

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nc96ads_a100_v4_reserved_1y.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nc96ads-a100-v4"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]

  # Its VMs start inside the reservation, which must exist first.
  depends_on = [azurerm_capacity_reservation.standard_nc96ads_a100_v4_reserved_1y]
}

# ---- Kubernetes standard-nc96ads-a100-v4, on_demand: AKS node pool of 0 to 1 node(s) over the
# horizon (Standard_NC96ads_A100_v4, 4x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nc96ads_a100_v4_on_demand_kubernetes" {
  count = var.nodes["standard_nc96ads_a100_v4_on_demand_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu4k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_NC96ads_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nc96ads_a100_v4_on_demand_kubernetes"]

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nc96ads-a100-v4"
    "infra-compile.io/pricing" = "on_demand"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- Kubernetes standard-nd96amsr-a100-v4, on_demand: AKS node pool of 0 to 1 node(s) over the
# horizon (Standard_ND96amsr_A100_v4, 8x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96amsr_a100_v4_on_demand_kubernetes" {
  count = var.nodes["standard_nd96amsr_a100_v4_on_demand_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu5k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96amsr_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nd96amsr_a100_v4_on_demand_kubernetes"]

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nd96amsr-a100-v4"
    "infra-compile.io/pricing" = "on_demand"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- Kubernetes standard-nd96isr-h100-v5, reserved_1y: AKS node pool of 0 to 1 node(s) over the
# horizon (Standard_ND96isr_H100_v5, 8x H100), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation standard-nd96isr-h100-v5-reserved-1y.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96isr_h100_v5_reserved_1y_kubernetes" {
  count = var.nodes["standard_nd96isr_h100_v5_reserved_1y_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu6k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96isr_H100_v5"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nd96isr_h100_v5_reserved_1y_kubernetes"]

  capacity_reservation_group_id = azurerm_capacity_reservation_group.standard_nd96isr_h100_v5_reserved_1y.id

  node_labels = {
    "infra-compile.io/pool"    = "standard-nd96isr-h100-v5"
    "infra-compile.io/pricing" = "reserved_1y"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]

  # Its VMs start inside the reservation, which must exist first.
  depends_on = [azurerm_capacity_reservation.standard_nd96isr_h100_v5_reserved_1y]
}
