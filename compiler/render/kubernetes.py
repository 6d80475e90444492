"""Kubernetes per site: kubernetes/<site>/*.yaml (namespace, nodes, Kueue, training, inference,
and the routing in front of the services: a Gateway, and per service an InferencePool, its
endpoint picker and an HTTPRoute). A vision model's service runs Triton Inference Server
(kubernetes/triton.yaml.j2: its model's config.pbtxt in a ConfigMap), routed by an HTTPRoute to
its Services.

Workloads select their scheduling domain (`infra-compile.io/pool: <instance>`); Kueue has one
ResourceFlavor per pricing block that training uses, all in one ClusterQueue; on-prem sites
list the Node objects Kubernetes holds, since no node group labels them.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.render.common import GPU_TAINT_KEY, POOL_LABEL, PRICING_LABEL, NodeShape
from compiler.render.domains import Block, Domain
from compiler.render.environment import k8s_name, render_template
from compiler.render.site import (EPP_PORT, LWS_API_VERSION, LWS_WORKER_INDEX_LABEL, ROUTE_TIMEOUT, SERVER_PORT,
                                  WIDE_EP_ENV, InferenceService, ServiceRoute, SiteView, TrainingJob)

# The metric each service's HorizontalPodAutoscaler scales on: vLLM's requests in flight per
# server pod, through the custom metrics API (Pods), which an adapter must serve (RUNBOOK.md).
HPA_METRIC = "vllm_num_requests_running"
# A disaggregated service's prefill servers run one prompt at a time (site.PREFILL_BATCH): they
# scale on the prompts waiting per pod instead.
PREFILL_HPA_METRIC = "vllm_num_requests_waiting"
COMMON = {"pool_label": POOL_LABEL, "pricing_label": PRICING_LABEL, "gpu_taint": GPU_TAINT_KEY,
          "hpa_metric": HPA_METRIC, "lws_api": LWS_API_VERSION, "worker_index_label": LWS_WORKER_INDEX_LABEL,
          "wide_ep_env": WIDE_EP_ENV}


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


@dataclass(frozen=True)
class Manifest:
    """One file of kubernetes/<site>/: its template and what it is of (a job, a service, a route)."""

    path: str
    template: str
    job: TrainingJob | None = None
    svc: InferenceService | None = None
    route: ServiceRoute | None = None


@dataclass(frozen=True)
class Autoscaler:
    """A service's HorizontalPodAutoscaler (templates/kubernetes/inference.yaml.j2)."""

    name: str                     # the HPA's name, its Deployment's
    metric: str                   # the custom metric (type Pods) it scales on


@dataclass(frozen=True)
class KubernetesSite:
    """kubernetes/<site>/ as it is rendered: its files and what they are rendered from. The
    render writes the files from it, and RUNBOOK.md names their files and objects from it."""

    site: SiteView
    manifests: tuple[Manifest, ...]   # in the order they are applied (their names' order)
    nodes: tuple[NodeObject, ...]     # on-prem: the Node objects (05-nodes.yaml)
    flavors: tuple[Flavor, ...]       # Kueue's (10-kueue.yaml)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(m.path for m in self.manifests)

    def _has(self, template: str) -> bool:
        return any(m.template == template for m in self.manifests)

    @property
    def kueue(self) -> bool:
        """Kueue and JobSet objects: both must be installed before the apply."""
        return self._has("kubernetes/kueue.yaml.j2")

    @property
    def gateway(self) -> bool:
        """The site's Gateway and its services' routes: the CRDs and the class come first."""
        return self._has("kubernetes/gateway.yaml.j2")

    @property
    def lws(self) -> bool:
        """LeaderWorkerSet objects (a replica over several nodes): its controller comes first."""
        return self._has("kubernetes/lws.yaml.j2")

    @property
    def autoscalers(self) -> tuple[Autoscaler, ...]:
        return tuple(Autoscaler(k8s_name(m.svc.object_name), hpa_metric(m.svc)) for m in self.manifests
                     if m.svc is not None)


def hpa_metric(svc: InferenceService) -> str:
    if svc.triton is not None:        # Triton's requests waiting to run (compiler/serving_stack.yaml)
        return svc.triton.stack.hpa_metric
    return PREFILL_HPA_METRIC if svc.role == "prefill" else HPA_METRIC


def _serving_template(svc: InferenceService) -> str:
    """Triton for a vision model's service; a LeaderWorkerSet for vLLM replicas over several nodes
    (wide expert parallelism); else a Deployment of vLLM servers."""
    if svc.triton is not None:
        return "kubernetes/triton.yaml.j2"
    return "kubernetes/lws.yaml.j2" if svc.multi_node else "kubernetes/inference.yaml.j2"


def kubernetes_site(site: SiteView) -> KubernetesSite:
    base = f"kubernetes/{site.name}"
    out = [Manifest(f"{base}/00-namespace.yaml", "kubernetes/namespace.yaml.j2")]
    if site.storage is not None:
        out.append(Manifest(f"{base}/01-storage.yaml", "kubernetes/storage.yaml.j2"))
    elif site.models is not None:
        out.append(Manifest(f"{base}/01-models.yaml", "kubernetes/models.yaml.j2"))
    nodes = node_objects(site) if not site.cloud else ()
    if nodes:
        out.append(Manifest(f"{base}/05-nodes.yaml", "kubernetes/nodes.yaml.j2"))
    if site.training_kubernetes:
        out.append(Manifest(f"{base}/10-kueue.yaml", "kubernetes/kueue.yaml.j2"))
    # a recurring job: one CronJob creates the JobSet for each run (applying it would start one now)
    out += [Manifest(f"{base}/20-train-{job.name}.yaml",
                     "kubernetes/recurring.yaml.j2" if job.cron else "kubernetes/jobset.yaml.j2", job=job)
            for job in site.training_kubernetes]
    if site.inference:
        out.append(Manifest(f"{base}/29-gateway.yaml", "kubernetes/gateway.yaml.j2"))
    out += [Manifest(f"{base}/30-serve-{svc.object_name}.yaml", _serving_template(svc), svc=svc)
            for svc in site.inference]
    out += [Manifest(f"{base}/31-route-{route.name}.yaml", "kubernetes/route.yaml.j2", route=route)
            for route in site.routes]
    return KubernetesSite(site, tuple(sorted(out, key=lambda m: m.path)), nodes,
                          flavors(site) if site.training_kubernetes else ())


def _render(k: KubernetesSite, m: Manifest) -> str:
    if m.template == "kubernetes/recurring.yaml.j2":
        jobset = render_template("kubernetes/jobset.yaml.j2", site=k.site, job=m.job, **COMMON)
        return render_template(m.template, site=k.site, job=m.job, jobset=jobset, **COMMON)
    common = {**COMMON, "hpa_metric": hpa_metric(m.svc)} if m.svc is not None else COMMON
    return render_template(m.template, site=k.site, job=m.job, svc=m.svc, route=m.route, nodes=k.nodes,
                           flavors=k.flavors, epp_port=EPP_PORT,
                           server_port=SERVER_PORT, route_timeout=ROUTE_TIMEOUT, **common)


def render_site(k: KubernetesSite) -> dict[str, str]:
    return {m.path: _render(k, m) for m in k.manifests}
