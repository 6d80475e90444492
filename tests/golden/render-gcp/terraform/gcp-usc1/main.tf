# GPU capacity for site gcp-usc1 as planned: 0 reservation(s),
# 1 node set(s) (Slurm VMs or instance templates, GKE node pools).
# Nothing else here provisions GPU nodes; schedule/gcp-usc1.csv says who holds which, when.

# GPUDirect: each GPU NIC gets its own VPC and subnet (MTU 8244), as Google documents
# for A3 machine types.
resource "google_compute_network" "gpu" {
  count                   = 8
  name                    = "${var.name_prefix}-gpunet-${count.index}"
  auto_create_subnetworks = false
  mtu                     = 8244
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

# ---- Slurm a3-megagpu-8g, spot: 8 node(s) a3-megagpu-8g-spot[01-08] in State=CLOUD
# (a3-megagpu-8g, 8x H100). No VMs here: slurm/gcp-usc1/resume.sh
# creates them from this instance template when jobs need them; suspend.sh deletes them.
resource "google_compute_instance_template" "a3_megagpu_8g_spot_slurm" {
  name              = "${var.name_prefix}-a3-megagpu-8g-spot"
  machine_type      = "a3-megagpu-8g"
  resource_policies = [google_compute_resource_policy.compact.id]

  disk {
    source_image = var.image
    boot         = true
    auto_delete  = true
    disk_size_gb = 200
    disk_type    = "pd-ssd"
  }

  guest_accelerator {
    type  = "nvidia-h100-mega-80gb"
    count = 8
  }

  network_interface {
    network    = var.network
    subnetwork = var.subnetwork
    nic_type   = "GVNIC"
  }

  dynamic "network_interface" {
    for_each = range(8)
    content {
      subnetwork = google_compute_subnetwork.gpu[network_interface.value].id
      nic_type   = "GVNIC"
    }
  }

  scheduling {
    on_host_maintenance = "TERMINATE"

    provisioning_model          = "SPOT"
    preemptible                 = true
    automatic_restart           = false
    instance_termination_action = "DELETE"
  }

  service_account {
    email  = var.service_account_email
    scopes = ["cloud-platform"]
  }

  labels = {
    "infra-compile-pool"    = "a3-megagpu-8g"
    "infra-compile-pricing" = "spot"
    "slurm-partition"       = "a3-megagpu-8g"
  }
}

# Shared file system: 20.0 TB planned, rounded up to Parallelstore's
# sizes (12,000 to 100,000 GiB in steps of 4,000 GiB). Needs private services access on the VPC.
resource "google_parallelstore_instance" "shared" {
  instance_id  = "${var.name_prefix}-shared"
  location     = var.zone
  capacity_gib = "20000"
  network      = var.network
}
