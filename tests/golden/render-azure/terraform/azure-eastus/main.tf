# GPU capacity for site azure-eastus as planned: 2 node group(s).
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

# ---- pool standard-nd96amsr-a100-v4-spot-k8s: 2 x Standard_ND96amsr_A100_v4 (8x A100-80GB), spot, for kubernetes
resource "azurerm_kubernetes_cluster_node_pool" "standard_nd96amsr_a100_v4_spot_kubernetes" {
  name                  = "gpu1k"
  kubernetes_cluster_id = var.aks_cluster_id
  vm_size               = "Standard_ND96amsr_A100_v4"
  node_count            = 2
  zones                 = [var.zone]
  os_sku                = "Ubuntu"

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  priority        = "Spot"
  eviction_policy = "Delete"
  spot_max_price  = -1

  node_labels = {
    "infra-compile.io/pool" = "standard-nd96amsr-a100-v4-spot"
  }

  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
}

# ---- pool standard-nd96isr-h100-v5-on-demand: 12 x Standard_ND96isr_H100_v5 (8x H100), on_demand, for slurm
resource "azurerm_linux_virtual_machine_scale_set" "standard_nd96isr_h100_v5_on_demand_slurm" {
  name                   = "${var.name_prefix}-standard-nd96isr-h100-v5-on-demand"
  resource_group_name    = azurerm_resource_group.site.name
  location               = azurerm_resource_group.site.location
  sku                    = "Standard_ND96isr_H100_v5"
  instances              = 12
  zones                  = [var.zone]
  admin_username         = var.admin_username
  single_placement_group = true
  overprovision          = false

  proximity_placement_group_id = azurerm_proximity_placement_group.gpu.id

  admin_ssh_key {
    username   = var.admin_username
    public_key = var.ssh_public_key
  }

  # The Azure HPC image carries the InfiniBand, NCCL and GPU driver stack.
  source_image_reference {
    publisher = "microsoft-dsvm"
    offer     = "ubuntu-hpc"
    sku       = "2204"
    version   = "latest"
  }

  os_disk {
    caching              = "ReadWrite"
    storage_account_type = "Premium_LRS"
  }

  network_interface {
    name                           = "eth0"
    primary                        = true
    accelerated_networking_enabled = true

    ip_configuration {
      name      = "internal"
      primary   = true
      subnet_id = var.subnet_id
    }
  }

  tags = {
    "infra-compile-pool" = "standard-nd96isr-h100-v5-on-demand"
    "slurm-partition"    = "standard-nd96isr-h100-v5-on-demand"
  }
}

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
