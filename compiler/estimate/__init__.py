"""The estimate stage: what every workload needs on every candidate (DESIGN.md section 3).

estimate(spec, catalog) -> Candidates: per workload, every feasible (site, instance,
fabric, GPU count, spot) option with its layout, memory, time or throughput, and the
options considered and rejected with the reason. Pure: reads the spec and catalog only.
Formulas and factors: docs/performance-model.md and catalog/data/performance.yaml.
"""

from __future__ import annotations

from types import MappingProxyType

from compiler.candidates import Candidates
from compiler.catalog.model import Catalog
from compiler.spec import Spec, TrainingWorkload

__all__ = ["estimate"]


def estimate(spec: Spec, catalog: Catalog) -> Candidates:
    from compiler.estimate.build import Memo, inference_candidates, training_candidates

    by_workload, rejected, memo = {}, {}, Memo()
    for w in spec.workloads:
        build = training_candidates if isinstance(w, TrainingWorkload) else inference_candidates
        cands, rejs = build(spec, w, catalog, memo)
        by_workload[w.name] = tuple(sorted(cands, key=lambda c: c.id))
        rejected[w.name] = tuple(sorted(rejs, key=lambda r: (r.site, r.instance, r.gpus, r.reason)))
    return Candidates(spec=spec, catalog=catalog, by_workload=MappingProxyType(by_workload),
                      rejected=MappingProxyType(rejected))
