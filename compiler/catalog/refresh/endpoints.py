"""Where each provider's public price list lives, and the environment variable that moves it.

Each base URL can be overridden (a mirror, a proxy cache, or the tests' local stub); docs/catalog.md
lists the variables. GCP's Cloud Billing Catalog API needs an API key; AWS's and Azure's lists
need no credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    variable: str
    default: str

    def url(self) -> str:
        return (os.environ.get(self.variable) or self.default).rstrip("/")


AWS_PRICE_LIST = Endpoint("INFRA_COMPILE_PRICES_AWS_URL", "https://pricing.us-east-1.amazonaws.com")
AWS_SPOT_FEED = Endpoint("INFRA_COMPILE_PRICES_AWS_SPOT_URL", "https://website.spot.ec2.aws.a2z.com/spot.js")
AZURE_RETAIL_PRICES = Endpoint("INFRA_COMPILE_PRICES_AZURE_URL", "https://prices.azure.com/api/retail/prices")
GCP_BILLING_CATALOG = Endpoint("INFRA_COMPILE_PRICES_GCP_URL",
                               "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus")

# The API key for GCP's catalog: ours first, then the variable Google's own tools read.
GCP_KEY_VARIABLES = ("INFRA_COMPILE_GCP_API_KEY", "GOOGLE_API_KEY")


def gcp_api_key() -> str | None:
    for name in GCP_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return None
