# Credentials come from the environment (az login, a managed identity or ARM_* variables),
# never from files.
provider "azurerm" {
  features {}
  subscription_id = var.subscription_id
}
