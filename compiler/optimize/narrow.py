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

In a re-plan (a baseline's Kept), each limited service the change leaves untouched (moves.touched:
the baseline's decisions still satisfy its rows) is first cut to the keys it ran on, where they
are within the limits: the LP prices no move, so it could lean a running service onto other sites
and the search would then pay that move, and such a service needs no LP to choose. The others are
narrowed on the LP as above, seeing those already cut.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.candidates import Candidates
from compiler.optimize import formulate as F
from compiler.optimize.settings import DEFAULT, Settings


def narrowed(candidates: Candidates, settings: Settings = DEFAULT, say=None, kept=None) -> Candidates:
    """The candidates with each limited service's cut to the keys the LP relaxation leans on, the
    LPs solved under `settings`' seed and a service decided at its `decided` share; `say` hears
    each round's services fixed. With `kept` (a re-plan's baseline), the untouched services first
    keep the keys they ran on."""
    from compiler.optimize.solve import HighsModel

    pol = candidates.spec.policy
    most = {"uses_site": pol.max_sites_per_service, "uses_gpu": pol.max_gpu_types_per_service,
            "uses_type": pol.max_instance_types_per_site}
    fixed: set[str] = set()
    reuse: dict = {}       # the workloads a round leaves as they were keep their reductions
    limited: set[str] | None = None
    while True:
        # Cutting candidates only takes keys away, so a service the first model does not count
        # never becomes counted: once those are all fixed, the candidates are final and the
        # model of them is left to the search, which builds it anyway.
        if limited is not None and limited <= fixed:
            return candidates
        problem = F.formulate(candidates, reuse)
        counted = {v.workload for v in problem.variables if v.family in F.COUNTED}
        limited = counted if limited is None else limited
        open_ = sorted(counted - fixed)
        if not open_:
            return candidates
        ran = {} if kept is None else _keys_ran_on(problem, kept, open_, most)
        kept = None             # the baseline cuts once, in the first round: the LP takes the rest
        if ran:
            if say is not None:
                say(f"narrowing on the baseline: {', '.join(sorted(ran))} kept on the sites and types they ran on "
                    f"({len(fixed) + len(ran)} of {len(fixed) + len(open_)} limited services)")
            candidates = _cut(candidates, ran)
            fixed.update(ran)
            continue
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
        candidates = _cut(candidates, {w: picks[w][0] for w in chosen})
        fixed.update(chosen)


def _cut(candidates: Candidates, keep: dict[str, dict[str, set]]) -> Candidates:
    """Each service in `keep` cut to its candidates whose every counted key is among those kept."""
    by_workload = dict(candidates.by_workload)
    for w, keys in keep.items():
        by_workload[w] = tuple(c for c in by_workload[w]
                               if all(key(c) in keys[f] for f, key in F.COUNTED.items() if f in keys))
    return replace(candidates, by_workload=by_workload)


def _keys_ran_on(problem: F.Problem, kept, open_: list[str], most) -> dict[str, dict[str, set]]:
    """The open services the change leaves untouched with the keys their baseline candidates hold
    (family -> keys), where those are within every count limit; the rest are left to the LP."""
    from compiler.optimize.moves import as_ran, touched

    moved, out = touched(problem, as_ran(problem, kept)), {}
    for w in open_:
        ran = [c for c in problem.chosen_from.get(w, ()) if c.id in kept.serving.get(w, ())]
        if w in moved or not ran:
            continue
        keys = {f: {key(c) for c in ran} for f, key in F.COUNTED.items() if most[f] is not None}
        per = {f: [k[:1] if f == "uses_type" else () for k in ks] for f, ks in keys.items()}
        if all(max(map(per[f].count, per[f])) <= most[f] for f in keys):
            out[w] = keys
    return out


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
