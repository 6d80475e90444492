# Credentials come from the environment (gcloud application-default login or a workload
# identity), never from files.
provider "google" {
  project = var.project_id
  region  = var.region
  zone    = var.zone

  default_labels = {
    "managed-by"         = "infra-compile"
    "infra-compile-site" = "gcp-usc1"
  }
}
