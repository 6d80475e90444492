"""The audit's own unit-cost and demand rules, written from the catalog and the prose of
DESIGN.md (section 4) and docs/optimizer.md ("The model in prose"), never from the model's code.

All money is USD over the planning horizon; a month is 730 hours.

- Commitments that outlive the horizon (policy.after_horizon, docs/optimizer.md): `prorated`
  pays the months inside the horizon only (a bought node: capex * min(1, horizon / useful
  life)); `full` pays a reserved term's every month and a bought node's whole capex; `continues`
  pays the months
  inside the horizon (a bought node: capex * min(1, horizon / useful life), its life counted from
  month 0) and, for each month after it, the nodes the last month's work leaves idle: a cloud
  pool's reserved nodes of that month beyond the node-months its jobs and replicas' GPUs ran in
  the last month (the dearer term's nodes counted busy first), a pool's bought nodes beyond the
  GPUs in use in the last month (owned nodes first), at the term's rate or the capex per month of
  life.
- A bought on-prem node: capex by that rule, plus support per year for the horizon, plus fabric: ports * cost per port + 3 * ports / radix
  switches (a two-tier leaf/spine tree) at the switch price, for the fabric its pool is wired
  with. Owned nodes cost power only.
- Power: node-hours run * kW per node * PUE * $/kWh, owned and bought alike. An inference
  replica of t GPUs on a G-GPU node runs t/G of a node for 730 hours a month.
- Cloud: node-hours * the instance's price in the site's region for the pricing option;
  reserved: nodes * 730 * months of the term (by the rule above) * the term's price.
- Storage: $/TB-month for every TB provisioned in a month, plus capex per TB of the peak
  (on-prem tiers).
- Egress: a training job away from its data's home moves the dataset once:
  dataset TB * 1000 GB * $/GB of the home's provider.
- Checkpoints: keep * model-state bytes (weights + gradients + optimizer + master copy, per
  parameter from the catalog's bytes_* factors).
- Demand: peak_rps * output_tokens * (1 + growth_per_month)^(m - start_month) output tokens/s
  in every month m from the window's start.
"""

from __future__ import annotations

import math

from compiler.catalog.model import Catalog, Fabric, OnPremNode, StorageTier
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload, OnPremSite, TrainingWorkload

HOURS = HOURS_PER_MONTH            # hours in a month (8760 / 12)
TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}
ONPREM_PRICINGS = ("owned", "purchase")
CLOUD_PRICINGS = ("reserved_3y", "reserved_1y", "on_demand", "spot")
FALLBACK_STATE_BYTES = 16.0        # bf16 + AdamW per parameter (ZeRO paper) when no factor is known


def provider(site) -> str:
    return site.provider if isinstance(site, CloudSite) else "on_prem"


def offered_pricings(site) -> tuple[str, ...]:
    """The pricings a site offers: a cloud site's own list; owned and purchase on-prem."""
    return tuple(site.pricing) if isinstance(site, CloudSite) else ONPREM_PRICINGS


def pricing_path(site) -> str:
    """The spec path a finding about a site's pricings concerns."""
    return f"{site.path}.pricing" if isinstance(site, CloudSite) else site.path


def whole_nodes(gpus: float, gpus_per_node: int) -> int:
    """The whole nodes `gpus` GPUs take."""
    return math.ceil(gpus / gpus_per_node - 1e-9)


def capex_for_horizon(node: OnPremNode, horizon: int) -> float:
    return node.capex_usd * min(1.0, horizon / (node.useful_life_years * 12.0))


def life_after_horizon(node: OnPremNode, horizon: int) -> float:
    """Months of a node's useful life after the horizon, bought in month 0."""
    return max(0.0, node.useful_life_years * 12.0 - horizon)


def held_terms(site, instance: str, pricing: str) -> dict[int, int]:
    """The commitments the spec says a cloud site already holds of `instance` under the term
    `pricing`: nodes by the month their term began (negative: before the horizon), from each
    one's `until` and the term's length. Paid whatever the plan does, so the plan prices them at
    nothing."""
    out: dict[int, int] = {}
    for r in getattr(site, "reserved", ()):
        if r.instance == instance and r.term == pricing:
            began = r.until_month - TERM_MONTHS[pricing]
            out[began] = out.get(began, 0) + r.nodes
    return out


def months_after(pricing: str, start: int, horizon: int) -> int:
    """Months of a reservation starting in `start` that fall after the horizon."""
    return max(0, start + TERM_MONTHS[pricing] - horizon)


def support_for_horizon(node: OnPremNode, horizon: int) -> float:
    return node.support_usd_per_year * horizon / 12.0


def fabric_per_node(fabric: Fabric) -> float:
    switches = 3.0 * fabric.ports_per_node / fabric.switch_radix
    return fabric.ports_per_node * fabric.cost_per_port_usd + switches * fabric.switch_cost_usd


def power_per_node_hour(node: OnPremNode, site: OnPremSite) -> float:
    return node.power_kw * site.pue * site.electricity_usd_per_kwh


def cloud_rate(catalog: Catalog, site: CloudSite, instance: str, pricing: str) -> float | None:
    """USD per node-hour; None where the instance has no such price in the site's region."""
    inst = catalog.instances.get(instance)
    return None if inst is None else inst.price(site.region, pricing)


def term_months(pricing: str, start: int, horizon: int) -> range:
    """The months of the horizon a reservation starting in `start` covers (one held from before
    the horizon, `start` negative, covers its first months)."""
    return range(max(0, start), min(horizon, start + TERM_MONTHS[pricing]))


def tiers_at(catalog: Catalog, site) -> dict[str, StorageTier]:
    prov = provider(site)
    return {t.name: t for t in catalog.storage.values() if t.provider == prov}


def egress_per_tb(catalog: Catalog, home_site) -> float:
    eg = catalog.egress.get(provider(home_site))
    return 0.0 if eg is None else eg.usd_per_gb * 1000.0


def model_params(model, catalog: Catalog) -> float:
    """Parameters of a workload's model (catalog name or inline), absolute."""
    m = catalog.models.get(model) if isinstance(model, str) else model
    return float(getattr(m, "params_b", 0.0) or 0.0) * 1e9


def _factor(catalog: Catalog, *names: str) -> float | None:
    for n in names:
        if n in catalog.factors:
            return float(catalog.factors[n].value)
    return None


def state_bytes_per_param(precision: str, optimizer: str, catalog: Catalog) -> float:
    """Weights + gradients + optimizer states (+ an fp32 master copy under mixed precision)."""
    w = _factor(catalog, f"bytes_weights.{precision}")
    g = _factor(catalog, f"bytes_grads.{precision}")
    o = _factor(catalog, f"bytes_optimizer.{optimizer}")
    if w is None or g is None or o is None:
        return FALLBACK_STATE_BYTES
    master = 0.0
    if precision != "fp32":
        master = _factor(catalog, f"bytes_master_weights.{optimizer}", "bytes_master_weights") or 0.0
    return w + g + o + master


def checkpoint_tb(w: TrainingWorkload, catalog: Catalog) -> float:
    """keep * model-state bytes, in TB (10^12 bytes)."""
    per = state_bytes_per_param(w.precision, w.optimizer, catalog)
    return w.checkpoint.keep * model_params(w.model, catalog) * per / 1e12


def dataset_tb(w) -> float:
    return w.data.dataset_tb if w.data else 0.0


def demand(w: InferenceWorkload, month: int) -> float:
    """Output tokens/s a service must carry in `month` (0 before its window)."""
    if month < w.window.start_month:
        return 0.0
    t = w.traffic
    return t.peak_rps * t.output_tokens * (1.0 + t.growth_per_month) ** (month - w.window.start_month)


def owned_nodes(site: OnPremSite, instance: str, month: int | None = None, start: str | None = None,
                catalog=None) -> int:
    """Nodes of `instance` the site owns in `month`: re-derived from each entry's `bought`, the
    spec's start and the node model's useful life in the catalog (the spec's own `retires` is
    what this checks). Without a month: every entry still in its life at the start."""
    total = 0
    for o in site.owned:
        if o.instance != instance:
            continue
        if o.bought is not None and start is not None and catalog is not None:
            by, bm = map(int, o.bought.split("-"))
            sy, sm = map(int, start.split("-"))
            end = by * 12 + bm + round(catalog.onprem_nodes[instance].useful_life_years * 12) - (sy * 12 + sm)
            if (month if month is not None else 0) >= end:
                continue
        total += o.nodes
    return total
