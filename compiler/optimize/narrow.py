"""Each service's candidates narrowed to the sites and types the LP relaxation leans on, where a
count limit of the policy binds (max_sites_per_service, max_gpu_types_per_service,
max_instance_types_per_site).

Those limits choose, per service, a few keys (sites, GPU types, instance types at a site) out of
many, for every month at once. The month windows and improving rounds free a few months at a time
and hold the others, so they cannot swap a service's type for another, and a search from the
greedy start ends far from the optimum. Here the choice is made first, by diving on the LP
relaxation of the limited model: each round solves it, fixes the services whose indicators it has
all but decided (the K highest carry Settings.decided of their sum), or else the one it has decided most,
to their K keys of highest indicator (ties: the GPUs the LP's replicas hold there, then the key's
name), and solves again with those candidates, until every limited service is fixed. One LP per
round; a service's choice then sees the others' already made. The search then runs on a model of
the shape it runs without the limits. A plan over fewer candidates is a plan of the whole model;
its bound is not, and the caller states a bound that is (compiler.operability.limited).
"""

from __future__ import annotations

from dataclasses import replace

from compiler.candidates import Candidates
from compiler.optimize import formulate as F
from compiler.optimize.settings import DEFAULT, Settings


def narrowed(candidates: Candidates, settings: Settings = DEFAULT, say=None) -> Candidates:
    """The candidates with each limited service's cut to the keys the LP relaxation leans on, the
    LPs solved under `settings`' seed and a service decided at its `decided` share; `say` hears
    each round's services fixed."""
    from compiler.optimize.solve import HighsModel

    pol = candidates.spec.policy
    most = {"uses_site": pol.max_sites_per_service, "uses_gpu": pol.max_gpu_types_per_service,
            "uses_type": pol.max_instance_types_per_site}
    fixed: set[str] = set()
    reuse: dict = {}       # the workloads a round leaves as they were keep their reductions
    while True:
        problem = F.formulate(candidates, reuse)
        open_ = sorted({v.workload for v in problem.variables if v.family in F.COUNTED} - fixed)
        if not open_:
            return candidates
        lp = HighsModel(problem, settings.seed).solve(relax=True)
        if not lp.has_solution:
            return candidates
        weight = _weights(problem, lp.values)
        picks = {w: _pick(problem.chosen_from[w], weight, w, most) for w in open_}
        decided = [w for w in open_ if picks[w][1] >= settings.decided]
        chosen = decided or [max(open_, key=lambda w: (picks[w][1], w))]
        if say is not None:
            say(f"narrowing on the LP: {', '.join(chosen)} fixed ({len(fixed) + len(chosen)} of "
                f"{len(fixed) + len(open_)} limited services)")
        by_workload = dict(candidates.by_workload)
        for w in chosen:
            keep = picks[w][0]
            by_workload[w] = tuple(c for c in by_workload[w]
                                   if all(key(c) in keep[f] for f, key in F.COUNTED.items() if f in keep))
            fixed.add(w)
        candidates = replace(candidates, by_workload=by_workload)


def _weights(problem: F.Problem, values) -> dict:
    """(service, family, key) -> (the LP's indicator, the GPUs its replicas hold on that key)."""
    by_id = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    weight: dict[tuple, list[float]] = {}
    for v in problem.variables:
        if v.family == "y":
            c = by_id[v.candidate]
            for family, key in F.COUNTED.items():
                weight.setdefault((v.workload, family, key(c)), [0.0, 0.0])[1] += values.get(v.name, 0.0) * c.gpus
        elif v.family in F.COUNTED:
            weight.setdefault((v.workload, v.family, _key_of(v)), [0.0, 0.0])[0] = values.get(v.name, 0.0)
    return weight


def _pick(cands, weight, name: str, most) -> tuple[dict[str, set], float]:
    """A service's K keys of highest weight for every count limit (family -> the keys kept; the
    model's candidates `cands` are cut to them family by family), and the least share of an
    indicator sum those keys carry."""
    kept, share, keep = tuple(cands), 1.0, {}
    for family, key in F.COUNTED.items():
        k = most[family]
        if k is None:
            continue
        scoped = family == "uses_type"
        groups: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for c in kept:
            groups.setdefault(key(c)[:1] if scoped else (), set()).add(key(c))
        chosen = set()
        for keys in groups.values():
            ranked = sorted(keys, key=lambda q: (*(-x for x in weight.get((name, family, q), (0.0, 0.0))), q))
            chosen.update(ranked[:k])
            total = sum(max(0.0, weight.get((name, family, q), (0.0, 0.0))[0]) for q in keys)
            if len(keys) > k and total > 0:
                top = sum(max(0.0, weight.get((name, family, q), (0.0, 0.0))[0]) for q in ranked[:k])
                share = min(share, top / total)
        kept = tuple(c for c in kept if key(c) in chosen)
        keep[family] = chosen
    return keep, share


def _key_of(v: F.Variable) -> tuple[str, ...]:
    """The key an indicator variable counts, from its typed fields."""
    if v.family == "uses_site":
        return (v.site,)
    if v.family == "uses_type":
        return (v.site, v.instance)
    return (v.gpu,)
