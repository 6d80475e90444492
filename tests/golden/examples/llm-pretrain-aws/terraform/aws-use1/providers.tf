# Credentials come from the environment (AWS_PROFILE, SSO or an instance role), never from files.
provider "aws" {
  region = var.region

  default_tags {
    tags = {
      "managed-by"         = "infra-compile"
      "infra-compile/plan" = "llm-pretrain-aws"
      "infra-compile/site" = "aws-use1"
    }
  }
}
