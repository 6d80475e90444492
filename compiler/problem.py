"""The Problem stage value (Candidates -> Problem -> Plan): the integer program as plain frozen
data, the names its variables and rows go by, and the Solution a solver returns for it.

The optimize stage builds a Problem (optimize/formulate.py, the maths in its docstring) and
solves it; the read-back (compiler/readback) and the report's pricing of options
(compiler/appraise) read a Problem and a Solution without importing the solver. Names are the
contract between them: a variable's value is found by its name (x_name, y_name, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from compiler.candidates import Candidate, Candidates
from compiler.spec import CloudSite, OnPremSite, Spec

TERMS = ("reserved_1y", "reserved_3y")


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str                                    # binary | integer | continuous
    ub: float | None = None
    costs: tuple[tuple[str, float], ...] = ()    # (breakdown category, USD per unit)
    # The solver works in value / scale. On-demand node-hours go to it as node-months: in hours,
    # HiGHS takes them for implied integers with ranges of thousands, and its reduced-cost
    # fixing then spends most of each root separation round on them (a large platform's root
    # takes less than half as long in months). A change of unit only: the model is the same.
    scale: float = 1.0
    # The month of the horizon the variable decides for (replicas, nodes and node-hours, storage
    # of month m); None for the ones that span months (a job's candidate, reserved terms, nodes
    # bought, fabric, a tier's peak). month_floors.py splits the problem by it.
    month: int | None = None
    # What else it is about, typed, set where formulate makes it (None where it does not apply):
    # read these, never the name, which stays what the solver and the plan's readers see.
    family: str = ""                 # the name's head: x, y, mix, buy, fab, fabnodes, reserved, ondemand,
                                     # inodes, res_free, res_taken, od_excess, storage, storage_open, storage_peak,
                                     # uses_site, uses_gpu, uses_type, in_mix, mix_change, pool_on,
                                     # pool_start (the operability limits, (15)),
                                     # idle_tail (a commitment's idle months after the horizon, (16)),
                                     # idle_load, idle_past_owned (the last month's load on bought
                                     # nodes, and whether it passes the owned ones, (16)), tail_credit (the
                                     # replicas of month H-1 whose load continues after it, (16)),
                                     # savings_plan, sp_cover, sp_cover_job, sp_credit, sp_tail (17),
                                     # capacity_block (18)
    workload: str | None = None      # x, y, od_excess: the candidate's workload; mix: the service
                                     # (mix[w@m#k]: one of its mixes in month m; k only names it)
    candidate: str | None = None     # x, y, od_excess: the candidate's id
    site: str | None = None          # the site of a pool (cloud or on-prem) or of a storage tier
    instance: str | None = None      # a pool's cloud instance or on-prem node model
    tier: str | None = None          # storage, storage_open, storage_peak: the storage tier
    fabric: str | None = None        # fab, fabnodes: the fabric wired
    pricing: str | None = None       # reserved: the term (its start month: Problem.reservations)
    gpu: str | None = None           # uses_gpu: the GPU type

    @property
    def cost(self) -> float:
        return sum(v for _, v in self.costs)


@dataclass(frozen=True)
class Constraint:
    name: str
    group: str                                   # one, demand, survive, quota, power ...
    terms: tuple[tuple[str, float], ...]
    sense: str                                   # <= | >= | ==
    rhs: float
    path: str = ""                               # JSONPath in the spec, e.g. $.sites[1].power_kw
    meaning: str = ""                            # what it says, in the spec's terms
    # What the row is about, typed, set where formulate makes it (None where it does not apply):
    # read these, never the name, which stays what the solver and the plan's readers see.
    family: str = ""                 # the name's head: one, demand, survive, quota, capacity, packing,
                                     # ondemand, pin_pricing, storage, mix, cover, month_floor, ...
                                     # (a row's cuts R#cutNN, R#mirNN keep its family and fields, in
                                     # group `cut`; cover[w@m/2] has the fields of cover[w@m])
    workload: str | None = None      # the workload (or service) it is about; a candidate's workload
    candidate: str | None = None     # od_excess, pin_nodes, fabric_use, buy_for; mix_y, node_mix,
                                     # node_for: the candidate of the replicas y it is about
    site: str | None = None          # the site of a pool, of a site limit or of storage
    instance: str | None = None      # a pool's cloud instance or on-prem node model
    gpu: str | None = None           # quota: the GPU type
    tier: str | None = None          # storage_max, storage_min, storage_peak: the storage tier
    fabric: str | None = None        # fabric_nodes: the fabric
    pricing: str | None = None       # pin_pricing: the pricing pinned (on_demand, a term, owned, purchase)
    without: str | None = None       # survive, cover[w@m/-s]: the site the service must do without
    month: int | None = None         # the month it is written for; None for rows across months


@dataclass(frozen=True)
class Reservation:
    """One reserved-node variable r_{p,k,a}: the nodes of a term starting in a month, the months
    of the horizon it covers."""
    var: str
    site: str
    instance: str
    term: str                                    # reserved_1y | reserved_3y
    start: int                                   # negative: bought before the horizon, held
    months: range


@dataclass(frozen=True)
class SavingsPlanTerm:
    """One Savings Plan commitment variable C_{k,a} (formulate (17)): USD per hour of a term bought
    in a month, covering the on-demand usage of the sites that list the term."""
    var: str
    term: str                                    # savings_plan_1y | savings_plan_3y
    start: int
    months: range                                # the months of the horizon it covers
    sites: tuple[str, ...]                       # the sites whose usage it covers


@dataclass(frozen=True)
class BlockOption:
    """A training candidate's Capacity Block (formulate (18)): the binary `var` = 1 runs the job on a
    block of its nodes for `days` days from its window's start, paid `usd` up front, its
    node-hours off the pool's on-demand and reserved rows."""
    var: str
    candidate: str
    workload: str
    site: str
    instance: str
    nodes: int
    days: int
    usd: float
    start_month: int


@dataclass(frozen=True)
class Problem:
    spec: Spec
    candidates: Candidates                       # as given (alternatives, rejections)
    chosen_from: Mapping[str, tuple[Candidate, ...]]  # after filters and pruning
    variables: tuple[Variable, ...]
    constraints: tuple[Constraint, ...]
    demand: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # w -> per month
    filtered_out: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # w -> reasons
    # (w, m) -> ((mix variable, ((y variable, replicas), ...)), ...): the minimal replica mixes (14)
    mixes: Mapping[tuple[str, int], tuple[tuple[str, tuple[tuple[str, int], ...]], ...]] = field(
        default_factory=dict)
    reservations: tuple[Reservation, ...] = ()
    # (site, node model) -> the fabric an on-prem pool's bought nodes are wired with when no
    # multi-node job needs another (pool_base_fabric)
    base_fabrics: Mapping[tuple[str, str], str] = field(default_factory=dict)
    savings_plans: tuple[SavingsPlanTerm, ...] = ()   # (17): the Savings Plan commitments
    capacity_blocks: tuple[BlockOption, ...] = ()     # (18): the training candidates' Capacity Blocks


def integers_of(problem: Problem, values: Mapping[str, float]) -> dict[str, float]:
    """Every integer variable of `problem` at its value in `values` rounded (0 where absent): a
    solver's values as the plan of whole nodes, replicas and terms they stand for."""
    return {v.name: float(round(values.get(v.name, 0.0))) for v in problem.variables if v.kind != "continuous"}


# --- names: the solver and the read-back map values by these names ----------------------

def x_name(c: Candidate) -> str:
    return x_id(c.id)


def x_id(cid: str) -> str:
    """x_name by the candidate's id (a plan names its placements' candidates by id)."""
    return f"x[{cid}]"


def y_name(c: Candidate, m: int) -> str:
    return y_id(c.id, m)


def y_id(cid: str, m: int) -> str:
    """y_name by the candidate's id."""
    return f"y[{cid}@{m:03d}]"


def buy_name(site: str, inst: str) -> str:
    return f"buy[{site}/{inst}]"


def fab_name(site: str, inst: str, fabric: str) -> str:
    return f"fab[{site}/{inst}/{fabric}]"


def fabn_name(site: str, inst: str, fabric: str) -> str:
    return f"fabnodes[{site}/{inst}/{fabric}]"


def od_name(site: str, inst: str, m: int) -> str:
    return f"ondemand[{site}/{inst}@{m:03d}]"


def res_name(site: str, inst: str, term: str, a: int) -> str:
    return f"reserved[{site}/{inst}/{term}@{a:03d}]"


def res_taken_name(site: str, inst: str, m: int) -> str:
    return f"res_taken[{site}/{inst}@{m:03d}]"


def inode_name(site: str, inst: str, m: int) -> str:
    return f"inodes[{site}/{inst}@{m:03d}]"


def stor_name(site: str, tier: str, m: int) -> str:
    return f"storage[{site}/{tier}@{m:03d}]"


def sopen_name(site: str, tier: str, m: int) -> str:
    return f"storage_open[{site}/{tier}@{m:03d}]"


def speak_name(site: str, tier: str) -> str:
    return f"storage_peak[{site}/{tier}]"


# Rows a family writes every month. Without a month: the name of the whole series, one name for
# all its months, as explain.py and the plan's binding constraints report it (series_name).

def _at(m: int | None) -> str:
    return "" if m is None else f"@{m:03d}"


def demand_name(w: str, m: int | None = None) -> str:
    return f"demand[{w}{_at(m)}]"


def survive_name(w: str, without: str, m: int | None = None) -> str:
    return f"survive[{w}{_at(m)}/-{without}]"


def quota_name(site: str, gpu: str, m: int | None = None) -> str:
    return f"quota[{site}/{gpu}{_at(m)}]"


def capacity_name(site: str, inst: str, m: int | None = None) -> str:
    return f"capacity[{site}/{inst}{_at(m)}]"


def pin_pricing_name(site: str, inst: str, pricing: str, m: int | None = None) -> str:
    return f"pin_pricing[{site}/{inst}/{pricing}{_at(m)}]"


def pin_nodes_name(cid: str, m: int | None = None) -> str:
    return f"pin_nodes[{cid}{_at(m)}]"


_SERIES = {
    "demand": lambda c: demand_name(c.workload),
    "survive": lambda c: survive_name(c.workload, c.without),
    "quota": lambda c: quota_name(c.site, c.gpu),
    "capacity": lambda c: capacity_name(c.site, c.instance),
    "pin_pricing": lambda c: pin_pricing_name(c.site, c.instance, c.pricing),
    "pin_nodes": lambda c: pin_nodes_name(c.candidate),
    "mix_hold": lambda c: f"mix_hold[{c.workload}]",
    "pool_life": lambda c: f"pool_life[{c.site}/{c.instance}]",
}


def series_name(c: Constraint) -> str:
    """The name of the series a row belongs to: its name without its month (quota[s/g@003] ->
    quota[s/g]), for the rows explain.py relaxes and readback/decode.py reports binding; a row written once
    is its own series."""
    if c.month is None:
        return c.name
    if c.group == "cut" or c.family not in _SERIES:
        raise ValueError(f"{c.name}: no series name for a {c.group} row of family {c.family}")
    return _SERIES[c.family](c)


# --- which candidates a workload may use, and at what pricing ---------------------------

def pinned_cloud_pricing(w) -> str | None:
    """The cloud pricing a workload's pin holds it to (constraint 12a), if any."""
    pricing = w.pin.pricing if w.pin else None
    return pricing if pricing in ("on_demand", *TERMS) else None


def pinned_onprem_pricing(w) -> str | None:
    """The on-prem pricing (owned or purchase) a workload's pin holds it to (12a), if any."""
    pricing = w.pin.pricing if w.pin else None
    return pricing if pricing in ("owned", "purchase") else None


def pricing_of(c: Candidate) -> str:
    if c.site_type == "on_prem":
        return "purchase"
    return "spot" if c.spot else "on_demand"


def policy_filter(spec: Spec, w, cands: tuple[Candidate, ...]) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """Apply policy, site restriction and pin (estimate does too; this makes pins in tests and
    what-if runs exact). Returns (kept, (candidate, reason) for each one dropped)."""
    kept, why = [], []
    pin, pol = w.pin, spec.policy
    for c in cands:
        site = spec.site(c.site)
        reason = None
        if pol.placement != "hybrid" and c.site_type != pol.placement:
            reason = f"policy.placement is {pol.placement}"
        elif pol.allowed_gpus is not None and c.gpu not in pol.allowed_gpus:
            reason = f"{c.gpu} not in policy.allowed_gpus"
        elif w.sites and c.site not in w.sites:
            reason = f"{c.site} not in the workload's sites"
        elif c.spot and (not isinstance(site, CloudSite) or "spot" not in site.pricing):
            reason = f"spot is not an allowed pricing at {c.site}"
        elif c.spot and pol.caps_spot:
            # (15c) a job runs on one candidate, all on spot or none: a share below 1 is no spot
            reason = f"policy.max_spot_share is {pol.max_spot_share:g}"
        elif pin is not None and (
                (pin.site and c.site != pin.site) or (pin.gpu and c.gpu != pin.gpu)
                or (pin.instance and c.instance != pin.instance)
                or (pin.gpus and c.gpus != pin.gpus)
                or (pin.pricing == "spot" and not c.spot)
                or (pin.pricing and pin.pricing != "spot" and c.spot)
                or (pin.pricing in ("on_demand", "spot", "reserved_1y", "reserved_3y")
                    and c.site_type != "cloud")
                or (pin.pricing in ("owned", "purchase") and c.site_type != "on_prem")):
            reason = "excluded by the pin"
        if reason:
            why.append((c, reason))
        else:
            kept.append(c)
    return kept, why


def owned_nodes(site: OnPremSite, instance: str, month: int | None = None) -> int:
    """Nodes of `instance` the site already owns in `month` (without one: in any month)."""
    return site.owned_nodes(instance, month)


def fabric_free(c: Candidate) -> bool:
    """Work inside one node never crosses the scale-out fabric: an on-prem inference replica (TP
    within a node) or a one-node training job runs the same on any fabric the pool is wired with."""
    return c.site_type == "on_prem" and (c.kind == "inference" or c.nodes <= 1)


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
    searched: bool = True        # False: the improving rounds' plan, under the LP relaxation's bound

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")
