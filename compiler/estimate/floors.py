"""Cost floors: the least a workload, or one training candidate, can add to any plan's cost.

A plan found on a sample of the node counts (pipeline.compile_spec) costs some U, and the optimum
costs no more. A training candidate c can only be in a plan of cost <= U if

    own(c) + sum over the other workloads w' of least(w')  <=  U,

where own(c) and least(w') are floors on disjoint parts of the objective (formulate.py's):
  - own(c): c's node-hours inside the horizon, T(c), at the least a node-hour of its pool can
    cost, plus its egress. Spot and on-prem power are charged on x_c exactly as T(c) times their
    rate. A cloud pool's hours are bought on demand or covered by reserved nodes (12), each
    reserved node-hour paid whether used or not, so the pool costs at least the least of its
    allowed on-demand and reserved rates times every hour its jobs and replicas run.
    Capex, support, fabric and storage are shared or >= 0: left out.
  - least(w') for a training workload: the same floor over every candidate it could have, with
    node_hours_floor's bound at one node (every count runs at least that), its visible part and
    no egress; for a service: each month's demand carried at the least cost per token/s of any
    of its candidates (the replicas' nodes at their pool's rate), fractional, without N+1.
So a count whose own floor passes U less the others' floors is in no optimal plan: the estimate
drops it (estimate.build, `ceiling`) and the model keeps every optimal plan; the solver's bound on
what is left is a bound on the whole space, as every plan with a dropped count costs more than U.
"""

from __future__ import annotations

from compiler.candidates import Candidate
from compiler.catalog.model import Catalog
from compiler import unit_costs
from compiler.estimate.options import Hardware
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload, Spec, TrainingWorkload

CLOUD_RATES = ("on_demand", "reserved_1y", "reserved_3y")


def node_hour_rate(spec: Spec, site_name: str, instance: str, spot: bool, catalog: Catalog) -> float:
    """The least USD one node-hour of (site, instance) can add to a plan (see the module)."""
    site = spec.site(site_name)
    if not isinstance(site, CloudSite):
        return unit_costs.power_usd_per_node_hour(catalog.onprem_nodes[instance], site)
    if spot:
        return unit_costs.cloud_price(catalog, site, instance, "spot") or 0.0
    rates = [p for p in (unit_costs.cloud_price(catalog, site, instance, o) for o in CLOUD_RATES) if p is not None]
    # a Capacity Block pays its rate for at least every hour the job runs
    block = unit_costs.capacity_block_rate(catalog, site, instance)
    return min(rates + ([block] if block is not None else []), default=0.0)


def egress(spec: Spec, w: TrainingWorkload, site_name: str, catalog: Catalog) -> float:
    """The egress formulate charges a training candidate at `site_name` (data away from home)."""
    home = w.data.home if w.data else None
    ds_tb = w.data.dataset_tb if w.data else 0.0
    if not home or site_name == home or not ds_tb:
        return 0.0
    return ds_tb * unit_costs.egress_usd_per_tb(catalog, spec.site(home))


def training_least(spec: Spec, w: TrainingWorkload, options: list[tuple[Hardware, bool, float]],
                   catalog: Catalog) -> float:
    """least(w) of a training workload from (hardware, spot, node-hours floor at one node) per option
    it may run on: any count n >= 1 runs at least min(floor, 730 x months left x n) node-hours
    inside the horizon."""
    visible = max(0, spec.horizon_months - w.window.start_month) * HOURS_PER_MONTH
    return min((node_hour_rate(spec, hw.site, hw.instance, spot, catalog) * min(floor, visible)
                for hw, spot, floor in options), default=0.0)


def service_least(spec: Spec, w: InferenceWorkload, cands: list[Candidate], demand: tuple[float, ...],
                  catalog: Catalog) -> float:
    """least(w) of a service: sum over months of demand x the least USD per token/s-month."""
    per_tps = [node_hour_rate(spec, c.site, c.instance, False, catalog) * HOURS_PER_MONTH * c.gpus
               / c.gpus_per_node / c.estimate.tokens_per_s for c in cands if c.estimate.tokens_per_s > 0]
    if not per_tps:
        return 0.0
    return sum(demand) * min(per_tps)
