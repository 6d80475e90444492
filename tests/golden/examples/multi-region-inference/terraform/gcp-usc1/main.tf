# GPU capacity for site gcp-usc1 as planned: 2 reservation(s),
# 3 node set(s) (Slurm VMs or instance templates, GKE node pools).
# Nothing else here provisions GPU nodes; schedule/gcp-usc1.csv says who holds which, when.
# Apply it month by month: months/NNN.tfvars sets the counts of each month (RUNBOOK.md).

# GPUDirect: each GPU NIC gets its own VPC and subnet (MTU 8244), as Google documents
# for A3 machine types (RDMA NICs on a RoCE network profile for A3 Ultra).
resource "google_compute_network" "gpu" {
  count                   = 8
  name                    = "${var.name_prefix}-gpunet-${count.index}"
  auto_create_subnetworks = false
  mtu                     = 8244
  network_profile         = "projects/${var.project_id}/global/networkProfiles/${var.zone}-vpc-roce"
}

resource "google_compute_subnetwork" "gpu" {
  count         = 8
  name          = "${var.name_prefix}-gpusub-${count.index}"
  network       = google_compute_network.gpu[count.index].id
  region        = var.region
  ip_cidr_range = "192.168.${count.index}.0/24"
}

# Compact placement: the nodes of each pool share a low-latency network block.
resource "google_compute_resource_policy" "compact" {
  name   = "${var.name_prefix}-compact"
  region = var.region

  group_placement_policy {
    collocation = "COLLOCATED"
  }
}

# ---- reservation a3-ultragpu-8g-reserved-1y: up to 1 x a3-ultragpu-8g, reserved_1y, nodes a3-ultragpu-8g-r1y01,
# used by kubernetes. Terms: 1 node in months 0-11.
# It exists in the months its terms run, holding their nodes: a term ends with the month's file
# dropping its nodes (months/NNN.tfvars). A specific reservation holds the capacity; the
# committed-use discount is bought on the billing account, outside Terraform.
resource "google_compute_reservation" "a3_ultragpu_8g_reserved_1y" {
  count = var.reserved_nodes["a3_ultragpu_8g_reserved_1y"] > 0 ? 1 : 0

  name = "${var.name_prefix}-a3-ultragpu-8g-reserved-1y"
  zone = var.zone

  specific_reservation_required = true

  specific_reservation {
    count = var.reserved_nodes["a3_ultragpu_8g_reserved_1y"]
    instance_properties {
      machine_type = "a3-ultragpu-8g"
      guest_accelerators {
        accelerator_type  = "nvidia-h200-141gb"
        accelerator_count = 8
      }
    }
  }
}

# ---- reservation g2-standard-96-reserved-1y: up to 4 x g2-standard-96, reserved_1y, nodes g2-standard-96-r1y[01-04],
# used by kubernetes. Terms: 2 nodes in months 8-19; 2 nodes in months 9-20.
# It exists in the months its terms run, holding their nodes: a term ends with the month's file
# dropping its nodes (months/NNN.tfvars). A specific reservation holds the capacity; the
# committed-use discount is bought on the billing account, outside Terraform.
resource "google_compute_reservation" "g2_standard_96_reserved_1y" {
  count = var.reserved_nodes["g2_standard_96_reserved_1y"] > 0 ? 1 : 0

  name = "${var.name_prefix}-g2-standard-96-reserved-1y"
  zone = var.zone

  specific_reservation_required = true

  specific_reservation {
    count = var.reserved_nodes["g2_standard_96_reserved_1y"]
    instance_properties {
      machine_type = "g2-standard-96"
      guest_accelerators {
        accelerator_type  = "nvidia-l4"
        accelerator_count = 8
      }
    }
  }
}

# ---- Kubernetes a3-ultragpu-8g, reserved_1y: GKE node pool of 1 to 1 node(s) over the
# horizon (a3-ultragpu-8g, 8x H200), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation a3-ultragpu-8g-reserved-1y.
resource "google_container_node_pool" "a3_ultragpu_8g_reserved_1y_kubernetes" {
  count = var.nodes["a3_ultragpu_8g_reserved_1y_kubernetes"] > 0 ? 1 : 0

  name           = "${var.name_prefix}-a3-ultragpu-8g-reserved-1y-k8s"
  cluster        = var.gke_cluster
  location       = var.region
  node_locations = [var.zone]
  # One zone (node_locations), so the per-zone count is the pool's.
  node_count = var.nodes["a3_ultragpu_8g_reserved_1y_kubernetes"]

  placement_policy {
    type = "COMPACT"
  }

  node_config {
    machine_type = "a3-ultragpu-8g"
    spot         = false

    guest_accelerator {
      type  = "nvidia-h200-141gb"
      count = 8
      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }

    gvnic {
      enabled = true
    }

    labels = {
      "infra-compile.io/pool"    = "a3-ultragpu-8g"
      "infra-compile.io/pricing" = "reserved_1y"
    }

    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }

    # The pool exists only in months its reservation does.
    reservation_affinity {
      consume_reservation_type = "SPECIFIC_RESERVATION"
      key                      = "compute.googleapis.com/reservation-name"
      values                   = google_compute_reservation.a3_ultragpu_8g_reserved_1y[*].name
    }
  }

  network_config {
    dynamic "additional_node_network_configs" {
      for_each = range(8)
      content {
        network    = google_compute_network.gpu[additional_node_network_configs.value].name
        subnetwork = google_compute_subnetwork.gpu[additional_node_network_configs.value].name
      }
    }
  }
}

# ---- Kubernetes g2-standard-96, reserved_1y: GKE node pool of 0 to 4 node(s) over the
# horizon (g2-standard-96, 8x L4), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
# The nodes start inside reservation g2-standard-96-reserved-1y.
resource "google_container_node_pool" "g2_standard_96_reserved_1y_kubernetes" {
  count = var.nodes["g2_standard_96_reserved_1y_kubernetes"] > 0 ? 1 : 0

  name           = "${var.name_prefix}-g2-standard-96-reserved-1y-k8s"
  cluster        = var.gke_cluster
  location       = var.region
  node_locations = [var.zone]
  # One zone (node_locations), so the per-zone count is the pool's.
  node_count = var.nodes["g2_standard_96_reserved_1y_kubernetes"]

  placement_policy {
    type = "COMPACT"
  }

  node_config {
    machine_type = "g2-standard-96"
    spot         = false

    guest_accelerator {
      type  = "nvidia-l4"
      count = 8
      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }

    gvnic {
      enabled = true
    }

    labels = {
      "infra-compile.io/pool"    = "g2-standard-96"
      "infra-compile.io/pricing" = "reserved_1y"
    }

    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }

    # The pool exists only in months its reservation does.
    reservation_affinity {
      consume_reservation_type = "SPECIFIC_RESERVATION"
      key                      = "compute.googleapis.com/reservation-name"
      values                   = google_compute_reservation.g2_standard_96_reserved_1y[*].name
    }
  }
}

# ---- Kubernetes g2-standard-96, on_demand: GKE node pool of 0 to 1 node(s) over the
# horizon (g2-standard-96, 8x L4), each month's size fixed by months/NNN.tfvars; it exists
# only in months with nodes.
resource "google_container_node_pool" "g2_standard_96_on_demand_kubernetes" {
  count = var.nodes["g2_standard_96_on_demand_kubernetes"] > 0 ? 1 : 0

  name           = "${var.name_prefix}-g2-standard-96-on-demand-k8s"
  cluster        = var.gke_cluster
  location       = var.region
  node_locations = [var.zone]
  # One zone (node_locations), so the per-zone count is the pool's.
  node_count = var.nodes["g2_standard_96_on_demand_kubernetes"]

  placement_policy {
    type = "COMPACT"
  }

  node_config {
    machine_type = "g2-standard-96"
    spot         = false

    guest_accelerator {
      type  = "nvidia-l4"
      count = 8
      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }

    gvnic {
      enabled = true
    }

    labels = {
      "infra-compile.io/pool"    = "g2-standard-96"
      "infra-compile.io/pricing" = "on_demand"
    }

    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }
  }
}
