"""Kubernetes per site: kubernetes/<site>/*.yaml (namespace, nodes, Kueue, training, inference,
and the routing in front of the services: a Gateway, and per service an InferencePool, its
endpoint picker and an HTTPRoute).

Workloads select their scheduling domain (`infra-compile.io/pool: <instance>`); Kueue has one
ResourceFlavor per pricing block that training uses, all in one ClusterQueue; on-prem sites
list the Node objects Kubernetes holds, since no node group labels them.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog
from compiler.render.common import GPU_TAINT_KEY, POOL_LABEL, PRICING_LABEL, NodeShape
from compiler.render.domains import Block, Domain
from compiler.render.environment import render_template
from compiler.render.site import (ENDPOINT_PICKER_IMAGE, EPP_PORT, ROUTE_TIMEOUT, SERVER_PORT,
                                  SiteView)

COMMON = {"pool_label": POOL_LABEL, "pricing_label": PRICING_LABEL, "gpu_taint": GPU_TAINT_KEY}


@dataclass(frozen=True)
class Flavor:
    """A Kueue ResourceFlavor: one pricing block of a domain, with the quota training may use."""

    domain: Domain
    block: Block
    nodes: int                    # the most nodes Kubernetes training holds of it in a month, at
                                  # most the block's (never less than one job part)

    @property
    def name(self) -> str:
        return self.block.flavor

    @property
    def shape(self) -> NodeShape:
        return self.domain.shape

    @property
    def gpus(self) -> int:
        return self.nodes * self.shape.gpus


@dataclass(frozen=True)
class NodeObject:
    name: str
    domain: str
    pricing: str
    months: str                   # months Kubernetes holds it, where it changes hands; else ""


def flavors(site: SiteView) -> tuple[Flavor, ...]:
    out = []
    for d in site.kubernetes_domains:
        jobs = [j for j in site.training_kubernetes if j.domain.name == d.name]
        for b in d.blocks:
            monthly = [0] * site.horizon_months
            largest = 0
            for j in jobs:
                for pricing, series in j.holdings:
                    if pricing == b.pricing:
                        for m, n in enumerate(series[:site.horizon_months]):
                            monthly[m] += n
                largest = max([largest] + [p.nodes for p in j.parts if p.pricing == b.pricing])
            # capped at the block: jobs that take turns on a node within a month count once
            nodes = min(max(max(monthly, default=0), largest), max(b.nodes, largest))
            if nodes:
                out.append(Flavor(d, b, nodes))
    return tuple(out)


def node_objects(site: SiteView) -> tuple[NodeObject, ...]:
    """On-prem: the nodes Kubernetes holds (static blocks, top of each block)."""
    out = []
    for d in site.kubernetes_domains:
        for b in d.blocks_for("kubernetes"):
            lo, hi = b.handover
            for i, name in zip(range(b.kubernetes.first, b.kubernetes.last + 1),
                               b.node_names(b.kubernetes.first, b.kubernetes.last)):
                months = ""
                if lo and lo <= i <= hi:
                    months = site.calendar.runs(b.months_held(i, "kubernetes"), ",")
                out.append(NodeObject(name, d.name, b.pricing, months))
    return tuple(out)


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    base = f"kubernetes/{site.name}"
    out = {f"{base}/00-namespace.yaml": render_template("kubernetes/namespace.yaml.j2",
                                                        site=site, **COMMON)}
    if site.storage is not None:
        out[f"{base}/01-storage.yaml"] = render_template("kubernetes/storage.yaml.j2",
                                                         site=site, **COMMON)
    elif site.models is not None:
        out[f"{base}/01-models.yaml"] = render_template("kubernetes/models.yaml.j2", site=site, **COMMON)
    if not site.cloud:
        nodes = node_objects(site)
        if nodes:
            out[f"{base}/05-nodes.yaml"] = render_template("kubernetes/nodes.yaml.j2", site=site,
                                                           nodes=nodes, **COMMON)
    if site.training_kubernetes:
        out[f"{base}/10-kueue.yaml"] = render_template("kubernetes/kueue.yaml.j2", site=site,
                                                       flavors=flavors(site), **COMMON)
    for job in site.training_kubernetes:
        jobset = render_template("kubernetes/jobset.yaml.j2", site=site, job=job, **COMMON)
        # a recurring job: one CronJob creates the JobSet for each run (applying it would start one now)
        out[f"{base}/20-train-{job.name}.yaml"] = (jobset if not job.cron else render_template(
            "kubernetes/recurring.yaml.j2", site=site, job=job, jobset=jobset, **COMMON))
    if site.inference:
        out[f"{base}/29-gateway.yaml"] = render_template("kubernetes/gateway.yaml.j2", site=site, **COMMON)
    for svc in site.inference:
        out[f"{base}/30-serve-{svc.object_name}.yaml"] = render_template(
            "kubernetes/inference.yaml.j2", site=site, svc=svc, **COMMON)
    for route in site.routes:
        out[f"{base}/31-route-{route.name}.yaml"] = render_template(
            "kubernetes/route.yaml.j2", site=site, route=route, epp_image=ENDPOINT_PICKER_IMAGE,
            epp_port=EPP_PORT, server_port=SERVER_PORT, route_timeout=ROUTE_TIMEOUT, **COMMON)
    return out
