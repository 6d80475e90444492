# GPU capacity for site azure-eastus as planned: 0 capacity reservation(s),
# 2 node set(s) (Slurm scale sets or Resume-created VMs, AKS node pools).
# ND-series VMs bring their InfiniBand HCAs with them; nodes of one scale set in a single
# placement group share one InfiniBand fabric.
# Nothing else here provisions GPU nodes; schedule/azure-eastus.csv says who holds which, when.
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

# ---- Kubernetes standard-nd96amsr-a100-v4, spot: AKS node pool of 2 to 2 node(s) over the
# horizon (Standard_ND96amsr_A100_v4, 8x A100-80GB), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96amsr_a100_v4_spot_kubernetes" {
  count = var.nodes["standard_nd96amsr_a100_v4_spot_kubernetes"] > 0 ? 1 : 0

  name                  = "gpu1k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96amsr_A100_v4"
  zones                 = [var.zone]
  os_sku                = "Ubuntu"
  node_count            = var.nodes["standard_nd96amsr_a100_v4_spot_kubernetes"]

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  priority        = "Spot"
  eviction_policy = "Delete"
  spot_max_price  = -1

  node_labels = {
    "infra-compile.io/pool"    = "standard-nd96amsr-a100-v4"
    "infra-compile.io/pricing" = "spot"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- Slurm standard-nd96isr-h100-v5, on_demand: 12 node(s) standard-nd96isr-h100-v5-od[01-12] in State=CLOUD
# (Standard_ND96isr_H100_v5, 8x H100). Terraform creates nothing for them:
# slurm/azure-eastus/resume.sh creates each VM, named after its Slurm node, when jobs need it
# (in the proximity placement group of output proximity_placement_group); suspend.sh deletes it.

# Shared file system: 30.0 TB planned, rounded up to the SKU's
# capacity step (AMLFS-Durable-Premium-250).
resource "azurerm_managed_lustre_file_system" "shared" {
  name                   = "${var.name_prefix}-shared"
  resource_group_name    = azurerm_resource_group.site.name
  location               = azurerm_resource_group.site.location
  sku_name               = "AMLFS-Durable-Premium-250"
  storage_capacity_in_tb = 32
  subnet_id              = var.lustre_subnet_id
  zones                  = [var.zone]

  maintenance_window {
    day_of_week        = "Sunday"
    time_of_day_in_utc = "02:00"
  }
}
