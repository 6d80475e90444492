"""Appraise: what the report prices beside the plan, from the Problem, the Solution and the Plan
read back from it (compiler/readback/): the limits the plan meets (limits.py), the next-best
options of each workload priced alone and owning against renting (alternatives.py), and why each
owned on-prem node the plan leaves idle stays idle (idle.py). Pricing for people, not for the
search: it imports no solver, and it changes nothing the read-back indexed.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.appraise.alternatives import alternatives, breakeven, chosen_service, chosen_training
from compiler.appraise.idle import idle_owned
from compiler.appraise.limits import binding_constraints
from compiler.plan import Plan, WorkloadPlan
from compiler.problem import Problem, Solution


def appraise(problem: Problem, sol: Solution, plan: Plan) -> Plan:
    """`plan` with its binding limits, each workload's chosen design and alternatives priced alone,
    the break-even of owning against renting, and its idle owned nodes."""
    plan = replace(plan, binding_constraints=binding_constraints(problem, sol), breakeven=breakeven(problem),
                   workloads=tuple(_priced(problem, w) for w in plan.workloads))
    return replace(plan, idle_owned=idle_owned(problem, plan))


def _priced(problem: Problem, w: WorkloadPlan) -> WorkloadPlan:
    """The workload with its chosen design priced alone and its alternatives against it."""
    by_id = {c.id: c for c in problem.chosen_from[w.name]}
    if w.kind == "training":
        [p] = w.placements
        alone = chosen_training(problem, by_id[p.candidate])
    else:
        alone = chosen_service(problem, [(by_id[p.candidate], list(p.monthly_replicas)) for p in w.placements])
    return replace(w, alternatives=alternatives(problem, w.name, alone), chosen_alone=alone)
