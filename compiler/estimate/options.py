"""Hardware options a workload may run on: (site, instance, fabric) with prices.

Cloud: the instances of the site's provider that have a price in the site's region.
On-prem: every node model x every catalog fabric the node supports (the fabric changes
the training estimate, so each is its own option). Filters: workload.sites,
policy.placement, policy.allowed_gpus and the workload's pin (site, gpu, instance).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler import unit_costs
from compiler.catalog.model import Catalog, Gpu
from compiler.spec import CloudSite, OnPremSite, Spec, TrainingWorkload, InferenceWorkload

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Hardware:
    site: str
    site_type: str           # cloud | on_prem
    provider: str            # aws | gcp | azure | on_prem
    instance: str
    gpu: Gpu
    gpus_per_node: int
    vcpus: int
    fabric: str
    node_gbps: float
    on_demand_usd_h: float | None   # per node-hour; on-prem: amortized capex + support
    spot_usd_h: float | None        # None: no spot at this site for this instance
    nvlink_domain: int = 0          # GPUs one NVLink domain joins where more than a node's (GB200
    # NVL72: 72 over 18 four-GPU instances; catalog nvlink_domain_gpus); 0: the node's own GPUs.
    # training.Fabric takes it (its `nvlink_domain`), so collectives within the domain run over NVLink

    @property
    def label(self) -> str:
        """instance, plus the fabric where it is a choice (on-prem)."""
        return self.instance if self.site_type == "cloud" else f"{self.instance}+{self.fabric}"


def reserved_sold(site: CloudSite, instance: str, catalog: Catalog) -> bool:
    """Whether the site may buy reserved terms of `instance` (allowed by the spec and priced in
    its region) or holds some already (CloudSite.reserved): where it does, a pool's node-hours
    are shared month by month with its reserved nodes, and training counts compare month by
    month (optimize/reductions.py)."""
    inst = catalog.instances.get(instance)
    return inst is not None and (bool(site.held(instance)) or any(
        term in site.pricing and inst.price(site.region, term) is not None for term in ("reserved_1y", "reserved_3y"))
        or savings_plan_covered(site, instance, catalog))


def savings_plan_covered(site: CloudSite, instance: str, catalog: Catalog) -> bool:
    """Whether a Savings Plan may cover `instance`'s on-demand hours at the site (it opts in and the
    instance has an on-demand rate there): its commitment is per month too, so the pool's hours
    are priced month by month as where reserved terms are sold."""
    inst = catalog.instances.get(instance)
    return (inst is not None and inst.price(site.region, "on_demand") is not None
            and any(t in site.pricing and unit_costs.savings_plan_share(catalog, site.provider, t) is not None
                    for t in unit_costs.SAVINGS_PLAN_MONTHS))


def allowed_sites(spec: Spec, workload: TrainingWorkload | InferenceWorkload) -> list:
    sites = list(spec.sites)
    if workload.sites:
        sites = [s for s in sites if s.name in workload.sites]
    placement = spec.policy.placement
    if placement == "cloud":
        sites = [s for s in sites if s.type == "cloud"]
    elif placement == "on_prem":
        sites = [s for s in sites if s.type == "on_prem"]
    pin = workload.pin
    if pin and pin.site:
        sites = [s for s in sites if s.name == pin.site]
    return sorted(sites, key=lambda s: s.name)


def hardware_options(spec: Spec, workload, catalog: Catalog) -> list[Hardware]:
    """Every (site, instance, fabric) the workload may use, sorted by site and label."""
    out: list[Hardware] = []
    allowed = spec.policy.allowed_gpus
    pin = workload.pin
    for site in allowed_sites(spec, workload):
        if isinstance(site, CloudSite):
            for inst in catalog.instances.values():
                if inst.provider != site.provider or inst.gpu not in catalog.gpus:
                    continue
                od = inst.price(site.region, "on_demand")
                if od is None:
                    continue
                spot = inst.price(site.region, "spot") if "spot" in site.pricing else None
                out.append(Hardware(site.name, "cloud", site.provider, inst.name, catalog.gpus[inst.gpu],
                                    inst.gpus, inst.vcpus, inst.fabric, inst.network_gbps, od, spot,
                                    inst.nvlink_domain_gpus or 0))
        elif isinstance(site, OnPremSite):
            for node in catalog.onprem_nodes.values():
                if node.gpu not in catalog.gpus or not site.offers(node):
                    continue
                hourly = (node.capex_usd / (node.useful_life_years * HOURS_PER_YEAR)
                          + node.support_usd_per_year / HOURS_PER_YEAR
                          + node.power_kw * site.pue * site.electricity_usd_per_kwh)
                for fname in node.fabrics:
                    fab = catalog.fabrics.get(fname)
                    if fab is None:
                        continue
                    out.append(Hardware(site.name, "on_prem", "on_prem", node.name, catalog.gpus[node.gpu],
                                        node.gpus, node.vcpus, fab.name, fab.node_gbps, hourly, None))
    out = [h for h in out
           if (allowed is None or h.gpu.name in allowed)
           and not (pin and pin.gpu and h.gpu.name != pin.gpu)
           and not (pin and pin.instance and h.instance != pin.instance)]
    return sorted(out, key=lambda h: (h.site, h.label))
