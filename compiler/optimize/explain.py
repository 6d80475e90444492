"""Explain an infeasible problem in the spec's terms (exit code 3).

1. A workload with no candidate left: name the estimator's rejection reasons (and the
   policy/pin filters that dropped the rest).
2. Otherwise re-solve with penalized slack on the named constraint groups: resource limits
   (power, racks, max GPUs, quota, cloud share) and the operability limits (instance types a
   site, months a mix holds) cheaply, serving the load (demand, availability) and placing a job
   dearly. The constraints whose slack is positive are the
   ones in conflict, and the slack says by how much.
"""

from __future__ import annotations

import math

from compiler.diagnostics import EXIT_INFEASIBLE, CompileError, Diagnostic, path_tuple
from compiler.optimize.formulate import Constraint, Problem, series_name
from compiler.optimize.settings import DEFAULT, Settings
from compiler.optimize.solve import solve
from compiler.plan import Calendar

PENALTY = DEFAULT.penalties


def no_candidates(problem: Problem) -> list[Diagnostic]:
    diags = []
    for w in problem.spec.workloads:
        if problem.chosen_from.get(w.name):
            continue
        reasons = [f"{r.site}/{r.label}" + (f" ({r.gpus} GPUs)" if r.gpus else "") + f": {r.reason}"
                   for r in problem.candidates.rejected.get(w.name, ())]
        reasons += list(problem.filtered_out.get(w.name, ()))
        shown = "; ".join(sorted(set(reasons))[:6]) or "no site offers a GPU it can run on"
        more = len(set(reasons)) - 6
        diags.append(Diagnostic("E301", f"{w.name} has no feasible candidate: {shown}"
                                + (f" (and {more} more)" if more > 0 else ""), path_tuple(w.path)))
    return diags


def explain(problem: Problem, solver: str = "cbc", time_limit: float | None = None,
            max_nodes: int | None = None, settings: Settings = DEFAULT) -> CompileError:
    """Build the CompileError (exit 3) for an infeasible problem; its elastic re-solve runs under
    `settings` (the compile's seed, penalties and count of rows named)."""
    diags = no_candidates(problem)
    if diags:
        return CompileError(diags, exit_code=EXIT_INFEASIBLE)
    penalty = settings.penalties
    sol = solve(problem, solver=solver, time_limit=time_limit, gap=settings.proven_gap, elastic=penalty,
                max_nodes=max_nodes, seed=settings.seed)
    if not sol.has_solution:
        return CompileError([Diagnostic("E302", "the constraints conflict, and re-solving with slack "
                                        "found no way to say which")], exit_code=EXIT_INFEASIBLE)
    by_name = {c.name: c for c in problem.constraints}
    # One diagnostic per series of rows (a row's months: formulate.series_name), worst month kept.
    worst: dict[str, tuple[float, str]] = {}
    for name, amount in sol.slack.items():
        family = series_name(by_name[name])
        if family not in worst or abs(amount) > abs(worst[family][0]):
            worst[family] = (amount, name)
    for family in sorted(worst, key=lambda f: (-penalty.get(by_name[worst[f][1]].group, 0), f))[:settings.max_reported]:
        amount, name = worst[family]
        c = by_name[name]
        edge = _edge_limit(problem, c, amount)
        if edge is not None:      # an edge location's limit, in the spec's terms (or none it states)
            if edge:
                diags.append(Diagnostic("E303", edge[0], path_tuple(edge[1])))
            continue
        diags.append(Diagnostic("E303", _message(problem, c, amount, sol.values), path_tuple(c.path)))
    if not diags:
        diags.append(Diagnostic("E302", "the constraints conflict (integer rounding); no single limit is short"))
    return CompileError(diags, exit_code=EXIT_INFEASIBLE)


def _month(c: Constraint, spec) -> str:
    """The row's month in running text (its calendar month where the spec has a start); nothing
    for a row of no month."""
    return f" in {Calendar(spec.start).month(c.month)}" if c.month is not None else ""


def _message(problem: Problem, c: Constraint, amount: float, values) -> str:
    spec = problem.spec
    if c.group == "power":
        site = spec.site(c.site)
        return (f"{c.site}'s power budget of {site.power_kw:g} kW is {amount:,.1f} kW short of what the "
                f"workloads placed there need ({site.power_kw + amount:,.1f} kW)")
    if c.group == "quota":
        return (f"the {c.gpu} quota at {c.site} ({c.rhs:g} GPUs) is {amount:,.0f} GPUs short{_month(c, spec)}: "
                f"the workloads that can only run there need {c.rhs + amount:,.0f}")
    if c.group == "racks":
        return f"{c.site} needs {amount:,.1f} more racks than max_racks allows ({c.meaning})"
    if c.group == "max_gpus":
        return f"{c.site} needs {amount:,.0f} more GPUs than its max_gpus allows"
    if c.group == "cloud_share":
        return (f"policy.max_cloud_share cannot be met: the cheapest feasible plan overspends the cloud "
                f"share by ${amount:,.0f}")
    if c.group in ("demand", "availability"):
        w = c.workload
        need = c.rhs
        have = need - amount
        if c.group == "availability":
            lost = c.without
            remaining = sorted({cd.site for cd in problem.chosen_from.get(w, ()) if cd.site != lost})
            where = ", ".join(remaining) if remaining else "no other site"
            return (f"{w} needs {need:,.0f} output tokens/s{_month(c, spec)} without {lost} "
                    f"(slo.availability >= 0.999) but only {where} remains, and it carries "
                    f"{max(have, 0):,.0f} tokens/s within its limits")
        return (f"{w} needs {need:,.0f} output tokens/s{_month(c, spec)} but its candidates carry only "
                f"{max(have, 0):,.0f} within the site limits")
    if c.group == "placement":
        return f"{_placed(c)} cannot be placed on any candidate within the site limits"
    if c.family == "max_types":
        return (f"{c.workload} needs {c.rhs + amount:,.0f} instance types at {c.site}, "
                f"policy.max_instance_types_per_site allows {c.rhs:g}")
    if c.family == "max_sites":
        return (f"{c.workload} needs {c.rhs + amount:,.0f} sites, policy.max_sites_per_service allows {c.rhs:g}")
    if c.family == "max_gpu_types":
        return (f"{c.workload} needs {c.rhs + amount:,.0f} GPU types, "
                f"policy.max_gpu_types_per_service allows {c.rhs:g}")
    if c.family == "pool_life":
        return (f"{c.instance} at {c.site} would carry replicas for fewer months than policy.min_pool_months "
                f"allows{_month(c, spec)} ({c.meaning})")
    if c.family == "mix_hold":
        return (f"{c.workload} must change its replica mix more often than policy.min_months_per_mix "
                f"allows{_month(c, spec)} ({c.meaning})")
    if c.group == "capacity":
        return f"{c.site}/{c.instance} is {amount:,.0f} GPUs short{_month(c, spec)} ({c.meaning})"
    return f"{c.name}: {c.meaning} (short by {amount:,.2f})"


def _edge_limit(problem: Problem, c: Constraint, amount: float) -> tuple[str, str] | tuple[()] | None:
    """A limit of an edge location (compiler/edge.py) as its spec states it: (message, path) for
    its max_boxes (the site's max_gpus) and a power_kw it states; () for the racks and power the
    expansion derived from max_boxes (they are short only where max_boxes is, which says it);
    None for any other constraint."""
    if c.group not in ("max_gpus", "power", "racks") or not c.site:
        return None
    site = problem.spec.site(c.site)
    e = getattr(site, "edge", None)
    if e is None:
        return None
    where = f"location {e.location} of edge site {e.site}"
    if c.group == "max_gpus":
        gpus = problem.candidates.catalog.onprem_nodes[e.box].gpus
        more = math.ceil(amount / gpus - 1e-9)
        return (f"{where} needs {more:,} more {e.box} boxes than its max_boxes ({e.max_boxes}) allows to serve its "
                f"demand there ({e.max_boxes + more:,} boxes; an edge location's load is not moved to another)",
                f"{site.path}.max_boxes")
    if c.group == "power" and e.power_stated:
        return (f"{where}: its power_kw of {site.power_kw:g} kW is {amount:,.2f} kW short of what the boxes its "
                f"demand needs draw ({site.power_kw + amount:,.2f} kW)", f"{site.path}.power_kw")
    return ()


def _placed(c: Constraint) -> str:
    """What a placement row places, as its name writes it: a workload (one[w]), a pinned pool,
    pricing and month (pin_pricing), a pinned candidate and month (pin_nodes)."""
    if c.family == "pin_pricing":
        return f"{c.site}/{c.instance}/{c.pricing}@{c.month:03d}"
    if c.family == "pin_nodes":
        return f"{c.candidate}@{c.month:03d}"
    return c.workload
