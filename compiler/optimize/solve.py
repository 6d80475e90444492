"""SOLVE: Problem -> Solution with pulp (the only module that imports pulp).

CBC (bundled with pulp) by default, HiGHS (highspy) with solver="highs". Deterministic:
variables and constraints enter the solver in the Problem's sorted order under index-based
names (v0000042), CBC runs on one thread with fixed seeds, HiGHS on one thread with a fixed
random seed. `elastic` adds a penalized slack to every constraint of the named groups; the
infeasibility explainer uses it.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Mapping

import pulp

from compiler.optimize.formulate import Problem

SEED = 20240601


@dataclass(frozen=True)
class Solution:
    solver: str
    status: str                  # optimal | feasible | infeasible | no_solution | unbounded
    objective: float
    best_bound: float
    gap: float
    seconds: float
    values: Mapping[str, float] = field(default_factory=dict)
    slack: Mapping[str, float] = field(default_factory=dict)   # elastic: constraint -> violation

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


def solve(problem: Problem, solver: str = "cbc", time_limit: float | None = None,
          gap: float | None = None, elastic: Mapping[str, float] | None = None,
          start: Mapping[str, float] | None = None, max_nodes: int | None = None,
          fixed: Mapping[str, float] | None = None) -> Solution:
    """`start`: values of integer variables for CBC's MIP start (start.py); HiGHS through pulp
    takes none, and finds its own first plans quickly. `max_nodes` stops the branch-and-bound
    search after that many nodes: unlike a time limit, where it stops is the same on every
    machine, so the plan is too. `fixed` holds variables at the given values (improve.py)."""
    lp = pulp.LpProblem("plan", pulp.LpMinimize)
    cat = {"binary": pulp.LpBinary, "integer": pulp.LpInteger, "continuous": pulp.LpContinuous}
    pv: dict[str, pulp.LpVariable] = {}
    for k, v in enumerate(problem.variables):
        ub = 1 if v.kind == "binary" else v.ub
        pv[v.name] = lp.add_variable(f"v{k:07d}", lowBound=0, upBound=ub, cat=cat[v.kind])
        if fixed and v.name in fixed:
            # after creation: pulp resets a binary's bounds to 0..1 when it is made
            pv[v.name].lowBound = pv[v.name].upBound = fixed[v.name]
    objective = pulp.LpAffineExpression([(pv[v.name], v.cost) for v in problem.variables if v.cost])
    slacks: dict[str, pulp.LpVariable] = {}
    for k, c in enumerate(problem.constraints):
        if elastic and c.group == "cut":
            continue    # valid inequalities of rows that may now bend; the model means the same
        expr = pulp.LpAffineExpression([(pv[n], a) for n, a in c.terms])
        penalty = (elastic or {}).get(c.group)
        if penalty is not None:
            up = lp.add_variable(f"s{k:07d}", lowBound=0)
            slacks[c.name] = up
            objective += penalty * up
            if c.sense == "<=":
                expr = expr - up
            elif c.sense == ">=":
                expr = expr + up
            else:
                down = lp.add_variable(f"t{k:07d}", lowBound=0)
                objective += penalty * down
                expr = expr + up - down
                slacks[c.name + "#"] = down
        if c.sense == "<=":
            lp += (expr <= c.rhs, f"c{k:07d}")
        elif c.sense == ">=":
            lp += (expr >= c.rhs, f"c{k:07d}")
        else:
            lp += (expr == c.rhs, f"c{k:07d}")
    lp += objective

    t0 = time.perf_counter()
    if solver == "highs":
        status, bound, mip_gap = _run_highs(lp, time_limit, gap, max_nodes)
    elif solver == "cbc":
        warm = False
        if start and not elastic:
            for name, value in start.items():
                if name in pv:
                    pv[name].setInitialValue(value)
            warm = True
        status, bound, mip_gap = _run_cbc(lp, time_limit, gap, warm, max_nodes)
    else:
        raise ValueError(f"unknown solver {solver!r}: use cbc or highs")
    seconds = time.perf_counter() - t0

    if status not in ("optimal", "feasible"):
        return Solution(solver, status, float("nan"), float("nan"), float("nan"), seconds)
    values = {name: float(var.varValue or 0.0) for name, var in pv.items()}
    obj = sum(v.cost * values[v.name] for v in problem.variables)
    if elastic:
        group = {c.name: c.group for c in problem.constraints}
        obj += sum((elastic.get(group[n.rstrip("#")]) or 0.0) * float(s.varValue or 0.0)
                   for n, s in slacks.items())
    if bound is None or bound != bound:
        # No bound read back: a proven optimum is its own bound; otherwise fall back on the gap
        # the solver reported, and failing that on 0 (every cost is >= 0), never on the plan itself.
        if status == "optimal":
            bound = obj
        elif mip_gap is not None and mip_gap == mip_gap:
            bound = obj * (1 - mip_gap)
        else:
            bound = 0.0
    bound = min(bound, obj)
    g = 0.0 if abs(obj) < 1e-9 else max(0.0, (obj - bound) / abs(obj))
    slack = {}
    for n, s in slacks.items():
        val = float(s.varValue or 0.0)
        if val > 1e-6:
            base = n.rstrip("#")
            slack[base] = slack.get(base, 0.0) + (val if not n.endswith("#") else -val)
    return Solution(solver, status, obj, bound, g, seconds, values, slack)


# Neighbourhood searches around the incumbent (DINS, RINS, RENS, VND). By default CBC stops
# looking for better plans once it has the greedy start; with these on, the 100-workload
# benchmark ends at a 7.5% gap in 85 s instead of staying on the start (26.9%).
CBC_HEURISTICS = ("rins on", "dins on", "rens on", "vnd on")


def _run_cbc(lp: pulp.LpProblem, time_limit, gap, warm: bool = False,
             max_nodes: int | None = None) -> tuple[str, float | None, float | None]:
    fd, log = tempfile.mkstemp(suffix=".log", prefix="cbc-")
    os.close(fd)
    try:
        # COIN_CMD on the CBC binary bundled with pulp (PULP_CBC_CMD is deprecated in pulp 3.3).
        cmd = pulp.COIN_CMD(path=pulp.PULP_CBC_CMD.pulp_cbc_path, msg=False, timeLimit=time_limit,
                            gapRel=gap, threads=1, logPath=log, warmStart=warm,
                            options=[f"randomSeed {SEED}", f"randomCbcSeed {SEED}", *CBC_HEURISTICS,
                                     *([f"maxNodes {max_nodes}"] if max_nodes else [])])
        lp.solve(cmd)
        with open(log, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    finally:
        os.unlink(log)
    bound = _last_float(r"Lower bound:\s*(-?[\d.eE+-]+)", text)
    mip_gap = _last_float(r"Gap:\s*(-?[\d.eE+-]+)", text)
    sol = lp.sol_status
    if lp.status == pulp.LpStatusInfeasible or sol == pulp.LpSolutionInfeasible:
        return "infeasible", None, None
    if lp.status == pulp.LpStatusUnbounded:
        return "unbounded", None, None
    if sol == pulp.LpSolutionOptimal and "Stopped on" not in text:
        return "optimal", bound, mip_gap
    if sol in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal):
        return "feasible", bound, mip_gap
    if "infeasible" in text.lower() and "Stopped on" not in text:
        return "infeasible", None, None
    return "no_solution", None, None


def _last_float(pattern: str, text: str) -> float | None:
    found = re.findall(pattern, text)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


def _run_highs(lp: pulp.LpProblem, time_limit, gap,
               max_nodes: int | None = None) -> tuple[str, float | None, float | None]:
    limits = {"mip_max_nodes": max_nodes} if max_nodes else {}
    cmd = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=gap, threads=1, random_seed=SEED, **limits)
    lp.solve(cmd)
    h = lp.solverModel
    info = h.getInfo()
    model_status = h.modelStatusToString(h.getModelStatus()).lower()
    has_sol = info.primal_solution_status == 2
    if "infeasible" in model_status:
        return "infeasible", None, None
    if "unbounded" in model_status:
        return "unbounded", None, None
    if not has_sol:
        return "no_solution", None, None
    bound = getattr(info, "mip_dual_bound", None)
    mip_gap = getattr(info, "mip_gap", None)
    status = "optimal" if model_status == "optimal" else "feasible"
    if bound is not None and abs(bound) > 1e300:
        bound = None
    return status, bound, mip_gap
