r"""Month floors: valid inequalities that hand the LP each month's own integer cost.

Where services share nodes, the LP relaxation spreads fractions of nodes and replicas over the
pools of every month, and a branch-and-bound search has to close that loss month by month: months
whose integer problems each close in a fraction of a second, searched as one tree, close slowly
(benchmarks/LOG.md has the figures). Yet the months are coupled only through
a few variables that span them (reserved terms, a job's candidate, nodes bought). This module
splits the problem along that seam and gives each month a floor.

The cut
-------
The horizon is cut into blocks B of Settings.block_months consecutive months. Let V_B be the variables of
B's months (Variable.month in B), R_B the rows whose month variables all lie in B together with
the rows over spanning variables only that reach B (a job's one-candidate row: split() says
which), and L_B the spanning variables in R_B. For any weights pi_l on l in L_B,

    F_B = min  sum_{v in V_B} cost_v v + sum_{l in L_B} pi_l l
          s.t. the rows R_B, every variable's bounds and integrality

is a relaxation of the whole problem projected onto V_B and L_B: every plan satisfies R_B, so

    month_floor[B]:  sum_{v in V_B} cost_v v + sum_{l in L_B} pi_l l >= F_B

holds for every plan. It is a valid inequality (group `cut`): the model keeps exactly its integer
plans and its optimum. F_B is the sub-problem's proven bound (its dual bound when the node limit
stops it first), so the cut stays valid whether or not the block is solved to the end.

The weights split each spanning variable's cost evenly over the months it reaches (a reserved node
of a 1-year term bought in month a: its price for each month it covers; a job's candidate: its
cost over the job's window). A cloud job's node-hours are paid through its pool's month variables
(on demand, or reserved nodes), not through its candidate, so each candidate's weights also carry
a shift that cancels over the blocks (_hours_shift): credited its node-hours in the months it runs
them, at the least rate a node-hour of the pool can cost, and charged the same sum spread over its
window. Without it a block would run the job in another block's months and pay nothing for it.
Then the left sides summed over the blocks are at most the objective, so the LP's bound is at
least sum_B F_B: every block of months solved in whole nodes and replicas, with reserved nodes
priced per month as if each block could buy its own.

Where the floors are built
--------------------------
Only for blocks with integer serving variables (replicas, mixes, nodes), on the platforms the
strategy sends down the month path (strategy.py). Each block's sub-problem is one HiGHS model
stopped after Settings.block_nodes nodes: where it stops is the same on every machine. The blocks
are independent, so they are solved Settings.workers at a time, on threads, the largest first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from compiler.optimize.clock import time_left
from compiler.optimize.formulate import Constraint, Problem, Variable
from compiler.optimize.settings import DEFAULT, Settings
from compiler.optimize.solve import HighsModel, solve_all
from compiler.problem import integers_of

SERVING = ("y", "mix", "inodes")   # the variable families of replicas, their mixes and their nodes


def blocks(problem: Problem, size: int) -> tuple[frozenset[int], ...]:
    """The horizon cut into runs of `size` consecutive months, each holding a serving month."""
    serving = serving_months(problem)
    H = problem.spec.horizon_months
    runs = (frozenset(range(a, min(H, a + size))) for a in range(0, H, size))
    return tuple(b for b in runs if b & serving)


@dataclass(frozen=True)
class Split:
    """The problem cut along its months: each block's rows R_B and each spanning variable's
    weight pi_{l,B} in the block's floor."""
    rows: Mapping[frozenset[int], tuple[Constraint, ...]]
    weights: Mapping[tuple[str, frozenset[int]], float]


def split(problem: Problem, size: int) -> Split:
    """R_B: the rows whose month variables all lie in B (local rows), and the rows over spanning
    variables only (a job's one-candidate row, a pool's fabric) that reach B: such a row reaches
    the months M_r its variables are held in by local rows. A spanning variable's months M*_l are
    those of its local rows and of the spanning rows that hold it (a job's every candidate
    spans its whole window, whichever months that candidate runs in), and its cost is split
    evenly over them: pi_{l,B} = cost_l |M*_l & B| / |M*_l|, plus a cloud job's node-hour shift
    (_hours_shift), which sums to zero over the blocks. Summed over the blocks the weights are at
    most the cost, which is what makes sum_B F_B a bound on the objective."""
    month = {v.name: v.month for v in problem.variables}
    cuts = blocks(problem, size)
    block_of = {m: b for b in cuts for m in b}
    local: dict[frozenset[int], list[Constraint]] = {b: [] for b in cuts}
    spanning_rows: list[Constraint] = []
    held_in: dict[str, set[int]] = defaultdict(set)        # M_l
    for c in problem.constraints:
        months = {month[n] for n, _ in c.terms if month[n] is not None}
        if not months:
            if c.terms:
                spanning_rows.append(c)
            continue
        home = {block_of.get(m) for m in months}
        if len(home) != 1 or None in home:
            continue       # a row across blocks (the cloud share) or outside them: left out
        local[home.pop()].append(c)
        for n, _ in c.terms:
            if month[n] is None:
                held_in[n] |= months
    reach = {c.name: set().union(*(held_in.get(n, set()) for n, _ in c.terms)) for c in spanning_rows}
    months_of: dict[str, set[int]] = {n: set(ms) for n, ms in held_in.items()}    # M*_l
    for c in spanning_rows:
        for n, _ in c.terms:
            months_of.setdefault(n, set()).update(reach[c.name])
    rows = {b: tuple(local[b]) + tuple(c for c in spanning_rows if reach[c.name] & b) for b in cuts}
    cost = {v.name: max(0.0, v.cost) for v in problem.variables}
    weights = {(n, b): cost[n] * len(ms & b) / len(ms) for n, ms in months_of.items() if ms
               for b in cuts if ms & b}
    for (n, b), usd in _hours_shift(problem, months_of, cuts).items():
        weights[(n, b)] = weights.get((n, b), 0.0) + usd
    return Split(rows, weights)


def _hours_shift(problem: Problem, months_of: Mapping[str, set[int]],
                 cuts: tuple[frozenset[int], ...]) -> dict[tuple[str, frozenset[int]], float]:
    """A zero-sum shift of each cloud training candidate's node-hour cost between the blocks.

    A job's on-demand and reserved node-hours are paid through its pool's month variables (rows
    (12)), not its candidate x, whose own cost is nearly nil. Left so, a block would choose for
    the job a candidate that runs in other blocks' months and pay nothing for it, and the floors
    would say little wherever training is much of the cost. So each candidate x is credited, in
    the block of each month m it runs in, kappa_{x,m} = its node-hours there at the least rate a
    node-hour of the pool can cost that month (on demand or an active reserved term), and charged
    the sum K_x of those credits spread over the blocks as its cost is (the months of its window,
    evenly). Charges and credits cancel over the blocks, so the weights summed over the blocks
    are still at most each variable's cost; and any weights give valid floors."""
    from compiler.spec import HOURS_PER_MONTH

    by_name = {v.name: v for v in problem.variables}
    rate_of_term = {r.var: by_name[r.var].cost / (HOURS_PER_MONTH * len(r.months))
                    for r in problem.reservations if len(r.months)}
    block_of = {m: b for b in cuts for m in b}
    credit: dict[str, dict[int, float]] = defaultdict(dict)
    for c in problem.constraints:
        if c.family != "ondemand":
            continue
        rates = [by_name[n].cost for n, _ in c.terms
                 if by_name[n].family == "ondemand" and by_name[n].ub != 0.0]
        rates += [rate_of_term[n] for n, a in c.terms if n in rate_of_term and a > 0]
        if not rates:
            continue
        rate = min(rates)
        for n, a in c.terms:
            if by_name[n].family == "x" and a < 0:
                credit[n][c.month] = credit[n].get(c.month, 0.0) - a * rate
    shift: dict[tuple[str, frozenset[int]], float] = defaultdict(float)
    for n, by_month in credit.items():
        inside = {m: k for m, k in by_month.items() if m in block_of}
        spread = set(months_of.get(n, ())) & set(block_of)
        if not inside or not spread or not set(inside) <= spread:
            continue
        total = sum(inside.values())
        for b in cuts:
            share = total * len(spread & b) / len(spread)
            own = sum(k for m, k in inside.items() if m in b)
            if share or own:
                shift[(n, b)] += share - own
    return shift


def serving_months(problem: Problem) -> set[int]:
    """Months with integer replica, mix or node variables: where the LP loses whole nodes."""
    return {v.month for v in problem.variables if v.month is not None and v.kind != "continuous"
            and v.family in SERVING}


@dataclass(frozen=True)
class Floors:
    """The month_floor rows, and each block's own plan: the values its sub-problem gave the
    integer variables of its months (stitched into a first plan: stitched). For the weights'
    re-split (floor_weights.py): the split, each block's values of its spanning variables
    (`spanning`, by (name, block)) and the most nodes a block's search took (`most_nodes`)."""
    rows: tuple[Constraint, ...]
    block_plans: Mapping[str, float]
    cut: Split | None = None
    spanning: Mapping[tuple[str, frozenset[int]], float] = field(default_factory=dict)
    most_nodes: int = 0


@dataclass(frozen=True)
class Block:
    """One block's sub-problem solved: its costs (`coef`, by variable name), its proven bound
    F_B (None where it proved none), its values and the nodes its search took."""
    months: frozenset[int]
    coef: Mapping[str, float]
    bound: float | None
    values: Mapping[str, float]
    nodes: int


def solve_blocks(problem: Problem, cut: Split, weights: Mapping[tuple[str, frozenset[int]], float],
                 max_nodes: int, seconds: float | None = None, settings: Settings = DEFAULT,
                 say: Callable[[str], None] | None = None,
                 on_block: Callable[[int], None] | None = None) -> list[Block]:
    """Each block of `cut` solved with the spanning variables costed at `weights` (F_B of the
    module's docstring), `max_nodes` at most a block, in the blocks' order. `say` hears each
    block's search (its months, nodes and bound) as it moves; `on_block(nodes)` is told as each
    block ends how many nodes it took (on the thread that solved it)."""
    left = time_left(seconds)
    by_name = {v.name: v for v in problem.variables}
    subs = []
    for block, rs in cut.rows.items():
        names = sorted({n for c in rs for n, _ in c.terms})
        coef = {n: (by_name[n].cost if by_name[n].month is not None else weights.get((n, block), 0.0))
                for n in names}
        subs.append((block, coef, replace(problem, variables=tuple(_costing(by_name[n], coef[n]) for n in names),
                                          constraints=tuple(rs))))
    # the blocks are independent models, each solved to its own node budget: on settings.workers
    # threads, each taking the next block as it is free, the floors are those of one block after
    # another. The largest block (by nonzeros) is started first: the last block, with the idle
    # tail after the horizon, is often most of the time, and started last it would run alone
    jobs = [(HighsModel(sub, settings.seed), {"max_nodes": max_nodes, "gap": settings.block_gap,
                                              "progress": _telling(say, block)})
            for block, _coef, sub in subs]
    first = sorted(range(len(subs)), key=lambda k: (-sum(len(c.terms) for c in subs[k][2].constraints), k))
    done = None if on_block is None else (lambda model, _sol: on_block(_nodes(model)))
    by_block = dict(zip(first, solve_all([jobs[k] for k in first], left, settings.workers, done)))
    out = []
    for (block, coef, _sub), (model, _kw), sol in zip(subs, jobs, (by_block[k] for k in range(len(subs)))):
        solved = sol.status in ("optimal", "feasible")
        out.append(Block(block, coef, sol.best_bound if solved else None, sol.values if solved else {},
                         _nodes(model)))
    return out


def _nodes(model: HighsModel) -> int:
    """The nodes the model's last search took (0 where it was closed without one)."""
    return max(0, int(model.h.getInfo().mip_node_count))


def _telling(say: Callable[[str], None] | None, block: frozenset[int]) -> Callable[[str], None] | None:
    """A block's search progress, named by its months, for `say` (None: untold)."""
    if say is None:
        return None
    return lambda message: say(f"month floors, months {min(block)}-{max(block)}: {message}")


def month_floors(problem: Problem, size: int | None = None, max_nodes: int | None = None,
                 seconds: float | None = None, settings: Settings = DEFAULT,
                 say: Callable[[str], None] | None = None, on_block: Callable[[int], None] | None = None) -> Floors:
    """The month_floor rows of every block of `size` months with a serving month (none for a
    block whose sub-problem proves no bound above 0), and the blocks' plans. `seconds`: the
    user's time limit for them all (--time-limit), where one is given: a block stopped by it
    gives the bound it proved, and blocks it leaves no time for give no floor (fewer valid rows).
    `size` and `max_nodes` replace settings.block_months and block_nodes; `say` hears each
    block's search as it moves, `on_block` each block's nodes as it ends (solve_blocks)."""
    size = settings.block_months if size is None else size
    max_nodes = settings.block_nodes if max_nodes is None else max_nodes
    cut = split(problem, size)
    by_name = {v.name: v for v in problem.variables}
    out, plans, spanning = [], {}, {}
    solved = solve_blocks(problem, cut, cut.weights, max_nodes, seconds, settings, say, on_block)
    for b in solved:
        if b.bound is None or not b.bound > 0:
            continue
        plans.update({n: float(round(x)) for n, x in b.values.items()
                      if by_name[n].month is not None and by_name[n].kind != "continuous"})
        spanning.update({(n, b.months): x for n, x in b.values.items() if by_name[n].month is None})
        out.append(floor_row(b, settings))
    return Floors(tuple(out), plans, cut, spanning, max((b.nodes for b in solved), default=0))


def floor_row(b: Block, settings: Settings = DEFAULT) -> Constraint:
    """Block b's month_floor row: its costs at least its proven bound (less the tolerance)."""
    first, last = min(b.months), max(b.months)
    return Constraint(
        f"month_floor[{first:03d}-{last:03d}]", "cut", tuple(sorted((n, a) for n, a in b.coef.items() if a)),
        ">=", b.bound - settings.floor_tolerance * abs(b.bound), "$.horizon_months",
        f"valid inequality: months {first}-{last} cost at least their own whole-node plan",
        family="month_floor")


def with_month_floors(problem: Problem, size: int | None = None, max_nodes: int | None = None,
                      floors: Floors | None = None) -> Problem:
    """The problem with its month floors added (the same integer plans and optimum)."""
    rows = (floors or month_floors(problem, size, max_nodes)).rows
    if not rows:
        return problem
    return replace(problem, constraints=tuple(sorted(problem.constraints + rows, key=lambda c: c.name)))


def _costing(v: Variable, usd: float) -> Variable:
    return replace(v, costs=(("floor", usd),) if usd else ())


def stitched(problem: Problem, block_plans: Mapping[str, float], model, nodes: int = DEFAULT.window_nodes,
             time_limit: float | None = None) -> dict[str, float] | None:
    """A first plan from the month floors' block plans: every month's integers held at the value
    its block's own sub-problem gave them, the spanning ones (reserved terms, jobs, nodes bought)
    solved for (`nodes` at most). None where those months admit no plan together."""
    held = {v.name: block_plans[v.name] for v in problem.variables
            if v.kind != "continuous" and v.month is not None and v.name in block_plans}
    sol = model.solve(fixed=held, max_nodes=nodes, time_limit=time_limit)
    return integers_of(problem, sol.values) if sol.has_solution else None
