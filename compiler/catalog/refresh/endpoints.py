"""Where each provider's public price list lives, and the environment variable that moves it.

Each base URL can be overridden (a mirror, a proxy cache, or the tests' local stub); docs/catalog.md
lists the variables. GCP's Cloud Billing Catalog API needs an API key; AWS's and Azure's lists
need no credentials.

Every list is read over https. Plain http is allowed only at an address the user set in one of
these variables (a mirror inside their network, a test stub): a default, a link found in a page or
a redirect never downgrades to it.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    provider: str
    variable: str
    default: str

    def url(self) -> str:
        return (os.environ.get(self.variable) or self.default).rstrip("/")

    def explicit(self) -> bool:
        return bool(os.environ.get(self.variable))


AWS_PRICE_LIST = Endpoint("aws", "INFRA_COMPILE_PRICES_AWS_URL", "https://pricing.us-east-1.amazonaws.com")
AWS_SPOT_FEED = Endpoint("aws", "INFRA_COMPILE_PRICES_AWS_SPOT_URL", "https://website.spot.ec2.aws.a2z.com/spot.js")
AZURE_RETAIL_PRICES = Endpoint("azure", "INFRA_COMPILE_PRICES_AZURE_URL", "https://prices.azure.com/api/retail/prices")
GCP_BILLING_CATALOG = Endpoint("gcp", "INFRA_COMPILE_PRICES_GCP_URL",
                               "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus")
ENDPOINTS = (AWS_PRICE_LIST, AWS_SPOT_FEED, AZURE_RETAIL_PRICES, GCP_BILLING_CATALOG)

# The API key for GCP's catalog: ours first, then the variable Google's own tools read.
GCP_KEY_VARIABLES = ("INFRA_COMPILE_GCP_API_KEY", "GOOGLE_API_KEY")

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> str:
    """scheme://host:port, lower-cased with the default port written out, so that
    `https://prices.azure.com:443` and `https://prices.azure.com` are one origin."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    except ValueError:          # a port that is not a number
        return f"{scheme}://{parts.netloc.lower()}"
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def http_origins(provider: str) -> frozenset[str]:
    """The plain-http origins the user named for `provider` in its INFRA_COMPILE_PRICES_* variables."""
    return frozenset(origin(e.url()) for e in ENDPOINTS
                     if e.provider == provider and e.explicit() and e.url().lower().startswith("http://"))


def gcp_api_key() -> str | None:
    for name in GCP_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return None


def secrets() -> tuple[str, ...]:
    """The secret values that must never reach a message (redacted wherever they appear)."""
    return tuple(os.environ[n] for n in GCP_KEY_VARIABLES if os.environ.get(n))
