"""Kubernetes per site: kubernetes/<site>/*.yaml (namespace, Kueue, training, inference)."""

from __future__ import annotations

from compiler.catalog.model import Catalog
from compiler.render.environment import render_template
from compiler.render.views import GPU_TAINT_KEY, POOL_LABEL, SiteView

COMMON = {"pool_label": POOL_LABEL, "gpu_taint": GPU_TAINT_KEY}


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    base = f"kubernetes/{site.name}"
    out = {f"{base}/00-namespace.yaml": render_template("kubernetes/namespace.yaml.j2",
                                                        site=site, **COMMON)}
    if site.storage is not None:
        out[f"{base}/01-storage.yaml"] = render_template("kubernetes/storage.yaml.j2",
                                                         site=site, **COMMON)
    if site.training_kubernetes:
        out[f"{base}/10-kueue.yaml"] = render_template("kubernetes/kueue.yaml.j2",
                                                       site=site, **COMMON)
    for job in site.training_kubernetes:
        out[f"{base}/20-train-{job.name}.yaml"] = render_template(
            "kubernetes/jobset.yaml.j2", site=site, job=job, **COMMON)
    for svc in site.inference:
        out[f"{base}/30-serve-{svc.object_name}.yaml"] = render_template(
            "kubernetes/inference.yaml.j2", site=site, svc=svc, **COMMON)
    return out
