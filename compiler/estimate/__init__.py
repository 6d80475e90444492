"""The estimate stage: what every workload needs on every candidate (DESIGN.md section 3).

estimate(spec, catalog) -> Candidates: per workload, every feasible (site, instance,
fabric, GPU count, spot) option with its layout, memory, time or throughput, and the
options considered and rejected with the reason. Pure: reads the spec and catalog only.
Formulas and factors: docs/performance-model.md and catalog/data/performance.yaml.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable

from compiler.candidates import Candidates
from compiler.catalog.model import Catalog
from compiler.spec import Spec, TrainingWorkload

__all__ = ["estimate", "longest_scan"]


def estimate(spec: Spec, catalog: Catalog, sample: bool = False, plan_cost: float | None = None,
             progress: Callable[[str], None] | None = None, memo=None) -> Candidates:
    """`sample`: training counts on a sparse ladder only, for a first plan. `plan_cost`: the cost
    of a plan of this spec; training counts that cannot be in a plan that cheap are dropped
    (floors.py: exact, every optimal plan stays). `progress` hears of each workload as it is
    sized (a long training window's scan takes seconds). `memo` (build.Memo): the searches of an
    earlier call on the same spec and catalog, reused (the sample's, by the full scan after it)."""
    from compiler.estimate.build import Memo, inference_candidates, training_candidates

    by_workload, rejected, memo = {}, {}, memo or Memo()
    services = [w for w in spec.workloads if not isinstance(w, TrainingWorkload)]
    jobs = [w for w in spec.workloads if isinstance(w, TrainingWorkload)]
    say = progress or (lambda _msg: None)
    what = "sampling" if sample else "estimating"
    for k, w in enumerate(services, 1):   # first: their floors bound what the training jobs may cost
        say(f"{what} service {w.name} ({k}/{len(services)})")
        by_workload[w.name], rejected[w.name] = inference_candidates(spec, w, catalog, memo)
    ceilings = _ceilings(spec, catalog, by_workload, memo, plan_cost) if plan_cost is not None else {}
    for k, w in enumerate(jobs, 1):
        say(f"{what} job {w.name} ({k}/{len(jobs)}): every node count of every option")
        by_workload[w.name], rejected[w.name] = training_candidates(spec, w, catalog, memo, sample,
                                                                    ceilings.get(w.name))
    return Candidates(spec=spec, catalog=catalog,
                      by_workload=MappingProxyType({w.name: tuple(sorted(by_workload[w.name], key=lambda c: c.id))
                                                    for w in spec.workloads}),
                      rejected=MappingProxyType({w.name: tuple(sorted(rejected[w.name], key=lambda r: (
                          r.site, r.label, r.gpus, r.reason))) for w in spec.workloads}))


def _ceilings(spec: Spec, catalog: Catalog, services: dict, memo, plan_cost: float) -> dict[str, float]:
    """Per training workload, the most its own cost floor may be (floors.py): the plan's cost, less
    every other workload's least cost (with a margin for rounding)."""
    from compiler.estimate import floors
    from compiler.estimate.inference import demand_series

    least: dict[str, float] = {}
    for w in spec.workloads:
        if not isinstance(w, TrainingWorkload):
            least[w.name] = floors.service_least(spec, w, list(services[w.name]),
                                                 demand_series(w, spec.horizon_months), catalog)
            continue
        least[w.name] = floors.training_least(spec, w, _one_node_floors(spec, w, catalog, memo), catalog)
    total = sum(least.values())
    return {w.name: plan_cost * (1 + 1e-9) + 1e-6 - (total - least[w.name])
            for w in spec.workloads if isinstance(w, TrainingWorkload)}


def _one_node_floors(spec: Spec, w: TrainingWorkload, catalog: Catalog, memo) -> list[tuple]:
    """(hardware, spot, node-hours floor) for every option and pricing variant the training
    workload's scan may size: build.node_hours_floor at one node, which every count runs."""
    from compiler.estimate.build import node_hours_floor
    from compiler.estimate.models import resolve_model
    from compiler.estimate.options import hardware_options

    model = resolve_model(w.model, catalog)
    out = []
    for hw in (hardware_options(spec, w, catalog) if model is not None else ()):
        floor = node_hours_floor(w, model, hw, 1, catalog, memo)
        if floor is not None:
            out += [(hw, spot, floor[0]) for spot in (False, True)
                    if not spot or (w.interruptible and hw.spot_usd_h is not None)]
    return out


def longest_scan(spec: Spec, catalog: Catalog) -> int:
    """About how many node counts estimate() sizes for its longest training workload: per option,
    the counts up to the one that finishes inside a month at the best MFU (where the scan's early
    stop comes), or the option's cap. Only decides whether a first plan on a sample pays."""
    import math

    from compiler.estimate.build import Memo, node_cap
    from compiler.spec import HOURS_PER_MONTH

    memo, longest = Memo(), 0
    for w in spec.workloads:
        if isinstance(w, TrainingWorkload) and not (w.pin and w.pin.gpus):
            longest = max(longest, sum(min(node_cap(spec, hw, catalog), math.ceil(base / HOURS_PER_MONTH) + 1)
                                       for hw, _spot, base in _one_node_floors(spec, w, catalog, memo)))
    return longest
