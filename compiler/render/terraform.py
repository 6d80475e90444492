"""Terraform per cloud site: terraform/<site>/{versions,providers,variables,main,outputs}.tf."""

from __future__ import annotations

from compiler.catalog.model import Catalog
from compiler.render.environment import render_template
from compiler.render.views import POOL_LABEL, GPU_TAINT_KEY, SiteView, terraform_site

FILES = ("versions.tf", "providers.tf", "variables.tf", "main.tf", "outputs.tf")


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    tf = terraform_site(site, catalog)
    provider = site.provider or ""
    return {
        f"terraform/{site.name}/{name}": render_template(
            f"terraform/{provider}/{name}.j2", tf=tf, site=site,
            pool_label=POOL_LABEL, gpu_taint=GPU_TAINT_KEY)
        for name in FILES
    }
