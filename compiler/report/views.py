"""View models for the design-review report, built from the Plan (and the catalog).

Templates see only these frozen records: every number a reviewer reads is computed here,
once, so report.md and report.html cannot disagree. Nothing here formats money (the
templates' `money` / `percent` filters do); estimate figures, whose units differ per figure,
are formatted here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.catalog.model import Catalog
from compiler.plan import (PRICINGS, UNDATED, Alternative, BreakEven, Calendar, DisaggregationPlan, IdleOwned,
                           OptionPart, Plan, Pool, WorkloadPlan, add_into, site_replicas)
from compiler.recurrence import Period
from compiler.render.changes import Changes, changes
from compiler.report import commitments, edge, operability, replan
from compiler.report.operability import OperabilityView
from compiler.spec import HOURS_PER_MONTH

# Cloud pools are paid for what they run; on-prem pools are there every month once bought.
ON_PREM_PRICING = ("owned", "purchase")
SOLVER_NAMES = {"cbc": "CBC", "highs": "HiGHS"}   # as the projects spell them
# The catalog figure (with its source) above which a spot fleet of one type in one region is flagged.
SPOT_FLEET_FACTOR = "risk.spot_fleet_nodes"


@dataclass(frozen=True)
class CostRow:
    label: str
    usd: float
    share: float                  # of the plan's total


@dataclass(frozen=True)
class SolverView:
    name: str
    status: str
    objective_usd: float
    best_bound_usd: float
    gap: float
    seconds: float
    optimal: bool
    gap_note: str = ""
    searched: bool = False          # a branch-and-bound search ran (plan.json's solver.strategy)


@dataclass(frozen=True)
class PoolRow:
    site: str
    instance: str
    gpu: str
    gpus_per_node: int
    nodes: int
    gpus: int
    pricing: str
    fabric: str
    gpu_memory_gb: float | None = None   # from the catalog, when it knows the GPU


@dataclass(frozen=True)
class SiteView:
    name: str
    type: str
    where: str                    # "aws us-east-1" or "on-prem"
    orchestrators: str
    pools: tuple[PoolRow, ...]
    gpus: int                     # the most GPUs its pools provide in one month, all together


@dataclass(frozen=True)
class FleetSpan:
    """Consecutive months in which every site's GPUs in use stay the same."""
    first_month: int
    last_month: int
    gpus: tuple[int, ...]         # per site, in FleetView.sites order
    calendar: Calendar = UNDATED

    @property
    def months(self) -> str:
        return self.calendar.span(self.first_month, self.last_month)


@dataclass(frozen=True)
class FleetView:
    sites: tuple[str, ...]
    monthly_gpus: tuple[tuple[int, ...], ...]   # per site: GPUs in use, month by month
    spans: tuple[FleetSpan, ...]
    calendar: Calendar = UNDATED  # names the months (the charts' axis too)

    @property
    def totals(self) -> tuple[int, ...]:
        """GPUs in use at all sites together, month by month."""
        return tuple(sum(col) for col in zip(*self.monthly_gpus))

    @property
    def peak_month(self) -> int:
        """The busiest month (the first of equals); 0 for an empty fleet."""
        totals = self.totals
        return max(range(len(totals)), key=lambda m: (totals[m], -m)) if totals else 0

    @property
    def peak_gpus(self) -> int:
        """The most GPUs in use at once: the busiest month's sum over every pool, not the sum of
        each pool's own peak (pools peak in different months)."""
        totals = self.totals
        return totals[self.peak_month] if totals else 0

    def site_peak(self, site: str) -> int:
        series = self.monthly_gpus[self.sites.index(site)] if site in self.sites else ()
        return max(series, default=0)


@dataclass(frozen=True)
class UtilizationRow:
    pool: str                     # "fra-dc1 dgx-h100 (owned)"
    site: str
    pricing: str
    gpus: int                     # peak GPUs of the pool
    mean: float                   # busy GPU-months / provided GPU-months
    low: float
    high: float
    idle_gpu_months: float        # provided but not busy, summed over the horizon
    series: tuple[float, ...]     # utilization month by month (empty: not reported)
    provided: tuple[int, ...] = ()  # GPUs paid for, month by month (0: the pool is not running)


@dataclass(frozen=True)
class ConstraintRow:
    name: str                     # its series and spec path: "quota[aws-use1/H100] at $.sites[0].quotas.H100"
    meaning: str
    family: str = ""              # power, racks, quota, cloud_share ... (BindingConstraint.family)


@dataclass(frozen=True)
class EstimateItem:
    label: str
    value: str


@dataclass(frozen=True)
class TimeShare:
    """One row of "Where the time goes": a term's share of the run's wall time."""
    label: str
    share: float

    @property
    def text(self) -> str:
        """'81.2%'; a share too small to show at one decimal reads '<0.1%', not '0.0%'."""
        return "<0.1%" if 0 < self.share < 0.0005 else f"{self.share * 100:.1f}%"


# A label for each term of the estimate's StepBreakdown (docs/performance-model.md, "Step-time breakdown").
TIME_SHARE_LABELS = {
    "compute": "Compute (at the GPU's base MFU)",
    "recompute": "Full recompute: the forward pass again",
    "moe_gemm": "MoE experts past the dense rate (routing, small GEMMs, imbalance)",
    "exposed_tp": "Tensor-parallel communication, exposed",
    "exposed_cp": "Context-parallel communication, exposed",
    "exposed_ep": "MoE dispatch and combine (all-to-all), exposed",
    "exposed_pp": "Pipeline sends between stages",
    "pipeline_bubble": "Pipeline bubble",
    "exposed_dp": "Data-parallel gradient all-reduce, exposed",
    "data_loading": "Waiting for data loading",
    "lost": "Lost: interruptions, restarts, checkpoint stalls",
}


@dataclass(frozen=True)
class PlacementRow:
    site: str
    instance: str
    pricing: str                  # the placement's main pricing (most node-hours)
    nodes: int
    gpus: int
    replicas: int
    gpus_per_replica: int = 0     # inference
    disaggregation: DisaggregationPlan | None = None   # a service's prefill and decode unit

    @property
    def replicas_text(self) -> str:
        """The replicas cell: '4 x 8 GPUs' (just '4' when the GPUs per replica are not known);
        disaggregated: '2 units of 4 prefill x tp4 + 1 decode x tp4'."""
        g = self.disaggregation
        if g is not None:
            return (f"{self.replicas} unit{'s' if self.replicas != 1 else ''} of {g.prefill_instances} prefill x "
                    f"tp{g.prefill_tp} + {g.decode_instances} decode x tp{g.decode_tp}")
        if not self.gpus_per_replica:
            return str(self.replicas)
        return f"{self.replicas} x {self.gpus_per_replica} GPU{'s' if self.gpus_per_replica != 1 else ''}"


@dataclass(frozen=True)
class HoldingSpan:
    """Consecutive months in which a workload holds the same nodes, per pricing, in one pool."""
    first_month: int
    last_month: int
    where: str                    # "aws-use1 p5.48xlarge"
    nodes: tuple[tuple[str, int], ...]   # (pricing, nodes held), in allotment order
    calendar: Calendar = UNDATED

    @property
    def months(self) -> str:
        return self.calendar.span(self.first_month, self.last_month)

    @property
    def text(self) -> str:
        """'1 reserved_3y + 31 on_demand nodes'."""
        total = sum(n for _, n in self.nodes)
        return " + ".join(f"{n} {p}" for p, n in self.nodes) + (" node" if total == 1 else " nodes")


@dataclass(frozen=True)
class ReplicaSpan:
    """Consecutive months in which a service runs the same replicas at every site."""
    first_month: int
    last_month: int
    replicas: tuple[int, ...]     # per site, in WorkloadView.replica_sites order
    calendar: Calendar = UNDATED

    @property
    def months(self) -> str:
        return self.calendar.span(self.first_month, self.last_month)


@dataclass(frozen=True)
class AlternativeRow:
    """One option of a workload priced alone (compiler/appraise/alternatives.py), the chosen
    design's included: every row of a table is priced by the same rule."""
    site: str
    instance: str
    gpu: str
    gpus: int
    pricing: str                  # per part: "owned", "purchase (3 new + 8 owned nodes)", "spot"
    cost_usd: float               # priced alone
    delta_usd: float              # cost_usd - the chosen design's, priced alone (0 for it)
    delta_share: float            # delta / the chosen design's cost alone (0 when that is 0)
    note: str
    chosen: bool = False
    gpus_text: str = ""           # "56 x H100"; a service's "2 x H100 a replica" (chosen: its label)
    where: str = ""               # per part: "fra-dc1 hgx-h100 (purchase)", joined with "; "


@dataclass(frozen=True)
class WorkloadView:
    name: str
    kind: str
    gpu: str
    gpus: int                     # GPUs held at once (inference: all its replicas, at their peak)
    gpus_label: str               # "512 x H100" or "32 replicas on 64 x H100"
    sites: str                    # site_names joined, for the text
    pricing: str                  # pricings joined, for the text
    layout: str                   # "TP 8 x PP 4 x DP 16"
    orchestrator: str
    start_month: int
    cost_usd: float
    placements: tuple[PlacementRow, ...]
    estimate: tuple[EstimateItem, ...]
    headline: str                 # duration (training) or capacity (inference), for tables
    alternatives: tuple[AlternativeRow, ...]
    why: str
    chosen_alone: AlternativeRow | None = None    # the row the alternatives' deltas are taken against
    holdings: tuple[HoldingSpan, ...] = ()      # nodes held per pricing, month ranges
    replica_sites: tuple[str, ...] = ()         # inference: the sites of replicas_by_month
    replicas_by_month: tuple[ReplicaSpan, ...] = ()   # inference: replicas per site, month ranges
    time_shares: tuple[TimeShare, ...] = ()     # training: where the wall time goes (terms at 0 left out)
    calendar: Calendar = UNDATED
    change: str = ""              # a re-plan: added | moved against the baseline ("": as it was)
    site_names: tuple[str, ...] = ()   # the sites of its placements, sorted
    pricings: tuple[str, ...] = ()     # its placements' main pricings, sorted

    @property
    def start(self) -> str:
        """Its start month in running text: 'month 2', or '2027-03'."""
        return self.calendar.month(self.start_month)


@dataclass(frozen=True)
class BreakevenRow:
    gpu: str
    on_prem: str                  # "fra-dc1 dgx-h100 (owned)" / "fra-dc1 hgx-h100 (bought, roce-400g)"
    cloud: str
    capex_per_gpu: float
    opex_per_gpu_month: float
    cloud_per_gpu_month: float
    months: float | None
    utilization: float | None
    verdict: str
    note: str


@dataclass(frozen=True)
class StorageRow:
    site: str
    tier: str
    capacity_tb: float
    cost_usd: float


@dataclass(frozen=True)
class HandoverRow:
    """Static nodes that change hands between Slurm and Kubernetes: who holds which, when."""

    site: str
    months: str
    orchestrator: str
    pool: str                     # instance / pricing
    nodes: str                    # Slurm hostlist


@dataclass(frozen=True)
class BoughtRow:
    site: str
    instance: str
    nodes: int
    unit_price_usd: float
    life_years: float
    charged_share: float          # of the price, what the plan charges over its horizon


@dataclass(frozen=True)
class SlackRow:
    """A training job's planned duration against the time it may take: its deadline, or where it
    has none, the rest of the horizon from its start month."""
    workload: str
    duration_days: float
    limit_days: float
    deadline: bool                # True: limit_days is the spec's deadline; False: the horizon's end
    slack_days: float             # limit - duration
    slack_share: float            # of the limit


@dataclass(frozen=True)
class SpotShareRow:
    workload: str
    spot_node_hours: float
    node_hours: float
    share: float                  # spot node-hours / node-hours run


@dataclass(frozen=True)
class SpotFleetRow:
    """The most spot nodes of one instance type asked of one region at once (all sites there)."""
    instance: str
    where: str                    # "aws us-east-1"
    nodes: int
    gpus: int
    month: int                    # the first month it is asked
    flagged: bool                 # nodes >= RiskView.spot_threshold
    calendar: Calendar = UNDATED

    @property
    def month_name(self) -> str:
        """The first month it is asked, as tables name it: '3', or '2027-04'."""
        return self.calendar.name(self.month)

    @property
    def from_text(self) -> str:
        """The same in running text: 'month 3', or '2027-04'."""
        return self.calendar.month(self.month)


@dataclass(frozen=True)
class SingleSiteRow:
    workload: str
    site: str


@dataclass(frozen=True)
class RiskView:
    slack: tuple[SlackRow, ...]
    spot_shares: tuple[SpotShareRow, ...]
    spot_fleets: tuple[SpotFleetRow, ...]   # largest first
    spot_threshold: int           # nodes of one type in one region at once that are flagged (0: none)
    single_site: tuple[SingleSiteRow, ...]
    threshold_source: str = ""    # the catalog source of the threshold: "title (url, as of date)"

    @property
    def largest_fleet(self) -> SpotFleetRow | None:
        return self.spot_fleets[0] if self.spot_fleets else None


@dataclass(frozen=True)
class WorkloadGroup:
    """Workloads that repeat one job: same kind and shape (GPU type, GPUs, layout, memory per GPU,
    and for a service its weights), names differing only in a numeric or date suffix
    ("ft-2027-01", "ft-2027-02"). A workload with no twin is a group of one."""
    stem: str                     # the name without its suffix ("ft"); a group of one: the name
    members: tuple[WorkloadView, ...]   # by name
    calendar: Calendar = UNDATED

    @property
    def folded(self) -> bool:
        return len(self.members) > 1

    @property
    def first(self) -> WorkloadView:
        return self.members[0]

    @property
    def label(self) -> str:
        """'ft-2027-01 .. ft-2027-12 (12 runs)'; a group of one: its name."""
        if not self.folded:
            return self.first.name
        return f"{self.first.name} .. {self.members[-1].name} ({len(self.members)} runs)"

    @property
    def cost_usd(self) -> float:
        return sum(w.cost_usd for w in self.members)

    @property
    def months(self) -> str:
        """The members' start months, as runs: '0-11' (dated: '2027-01..2027-12')."""
        return self.calendar.runs(sorted({w.start_month for w in self.members}))

    @property
    def months_phrase(self) -> str:
        """The same in running text: 'months 0-11', or '2027-01..2027-12'."""
        return self.months if self.calendar.dated else f"months {self.months}"

    @property
    def sites(self) -> str:
        return ", ".join(sorted({s for w in self.members for s in w.site_names}))

    @property
    def pricing(self) -> str:
        return ", ".join(sorted({q for w in self.members for q in w.pricings}))

    @property
    def line(self) -> str:
        """The summary's line: a group of one says why it was chosen; repeats fold into one."""
        if not self.folded:
            return self.first.why
        w = self.first
        return (f"{len(self.members)} runs of {self.stem} ({self.first.name} to {self.members[-1].name}): "
                f"{w.kind}, {w.gpus_label} at {self.sites} ({self.pricing.replace('_', ' ')}), "
                f"{self.months_phrase}, {_money(self.cost_usd)} in all.")


@dataclass(frozen=True)
class ReportView:
    spec_name: str
    spec_sha256: str
    catalog_version: str
    prices_as_of: str               # the oldest price its spec's sites were planned with ("" unknown)
    horizon_months: int
    total_cost_usd: float
    monthly_average_usd: float
    solver: SolverView
    summary: tuple[str, ...]      # the chosen design and why, one sentence each
    by_category: tuple[CostRow, ...]
    by_site: tuple[CostRow, ...]
    by_workload: tuple[CostRow, ...]
    sites: tuple[SiteView, ...]
    fleet: FleetView
    utilization: tuple[UtilizationRow, ...]
    binding: tuple[ConstraintRow, ...]
    workloads: tuple[WorkloadView, ...]
    breakeven: tuple[BreakevenRow, ...]
    storage: tuple[StorageRow, ...]
    breakeven_notes: tuple[tuple[str, str], ...] = ()   # (GPU, note), each once
    handovers: tuple[HandoverRow, ...] = ()
    bought: tuple[BoughtRow, ...] = ()
    risk: RiskView | None = None
    idle_owned: tuple["IdleOwnedRow", ...] = ()
    operability: OperabilityView | None = None
    workload_groups: tuple[WorkloadGroup, ...] = ()   # the workloads with repeats folded, by name
    by_site_rule: str = ""        # how the by-site rows are drawn up, one sentence
    by_workload_rule: str = ""    # how the by-workload rows are drawn up, one sentence
    commitments: commitments.CommitmentsView | None = None   # what outlives the horizon
    held: commitments.HeldView | None = None    # commitments already bought (None: the spec holds none)
    owned_ages: commitments.OwnedAgesView | None = None   # owned nodes with a purchase date (None: none)
    savings_plans: commitments.SavingsPlansView | None = None   # Savings Plans bought (None: none)
    capacity_blocks: commitments.CapacityBlocksView | None = None   # Capacity Blocks bought (None: none)
    calendar: Calendar = UNDATED  # how months are named (the spec's start)
    changes: Changes | None = None   # a re-plan: what changes against the baseline (None: no baseline)
    edge: tuple[edge.EdgeFleetView, ...] = ()   # edge sites: boxes, demand and per-box capacity by location

    @property
    def period(self) -> str:
        """The horizon's calendar months after its length: '' undated, ' (2027-01..2029-12)'."""
        return f" ({self.calendar.period(self.horizon_months)})" if self.calendar.dated else ""


UNATTRIBUTED = "shared (not charged to one site or workload)"
SITE_UNRECORDED = "all sites (this plan does not record what each site bills)"
# How the by-site and by-workload rows are drawn up, in the report's words.
SITE_RULE = ("Each site is charged what it bills: the compute of its cloud pools at their pricing, "
             "the capex, support, fabric and power of its on-prem nodes, its storage, and the egress "
             "of datasets that leave it; nothing is split by use, so the sites add up to the total.")
SITE_RULE_UNRECORDED = ("This plan does not record what each site bills, so no split by site is "
                        "guessed; a compile by this version records it.")
WORKLOAD_RULE = ("Each workload is charged what it alone incurs (its spot hours, its power, the egress "
                 "of its data) and, by use (node-hours, TB-months), a share of what it shares with "
                 "others: a pool's on-demand hours, reserved terms, bought nodes and storage.")


@dataclass(frozen=True)
class IdleOwnedRow:
    """Owned nodes of a site the plan leaves idle in a run of months, and for one workload that
    could run then, what made using them dearer (plan.json's idle_owned)."""
    site: str
    pool: str                     # "dc1 dgx-h100 (owned)"
    idle: str                     # "2 of 2"
    months: str                   # "0-11"
    workload: str                 # "" where no other workload runs then
    why: str


def _idle_why(r: IdleOwned, plan: Plan) -> str:
    """One idle owned row's reason in words, every figure from the row: one reason, and one the
    rest of the report bears out (no binding constraint is claimed: none limits owned nodes)."""
    return _IDLE_WHY[r.reason](r, plan)


def _idle_priced(r: IdleOwned) -> dict[str, str]:
    """The owned option's terms in words, by IDLE_TERMS name ('' for a term it does not have)."""
    return {"storage": (f"storage at {r.site} {_money(r.storage_usd)} ({r.storage_tier}, {r.storage_tb:g} TB "
                        f"bought for {r.data_tb:g} TB of data and checkpoints)") if r.storage_usd else "",
            "power": f"power {_money(r.power_usd)}",
            "egress": f"egress {_money(r.egress_usd)}" if r.egress_usd else ""}


def _idle_dearer(r: IdleOwned, plan: Plan) -> str:
    items = _idle_priced(r)
    lead = items.pop(r.detail)        # the largest term (IDLE_TERMS)
    others = [v for v in items.values() if v]
    with_ = f" with {', '.join(others)}" if others else ""
    return f"{lead}; alone on owned nodes {_money(r.owned_option_usd)}{with_}, against {_money(r.plan_usd)} in the plan"


def _idle_cheaper_alone(r: IdleOwned, plan: Plan) -> str:
    return (f"cheaper alone on owned nodes: {_money(r.owned_option_usd)} "
            f"({', '.join(v for v in _idle_priced(r).values() if v)}), against {_money(r.plan_usd)} in the plan; "
            f"{_kept_elsewhere(plan)}")


# Each reason of IDLE_REASONS in words.
_IDLE_WHY = {
    "no_workload": lambda r, plan: ("every workload that runs then already runs wholly on these nodes"
                                    if r.detail else "no workload runs then"),
    "not_allowed": lambda r, plan: f"cannot run on these nodes: {r.detail}",
    "too_big": lambda r, plan: f"too big for the owned nodes: {r.detail}",
    "availability": lambda r, plan: f"the availability rule, {r.detail}, keeps it from running wholly on these nodes",
    "dearer": _idle_dearer,
    "cheaper_alone": _idle_cheaper_alone,
}


def _kept_elsewhere(plan: Plan) -> str:
    """What keeps a workload that is cheaper alone on idle owned nodes elsewhere, as one reason.
    Not a site's power, racks or max_gpus, even where they bind: they limit new nodes only
    (formulate (7)-(9)), never the use of owned ones. A solver that stopped short of optimal may
    simply not have found the move; the spec's operability limits, where they cost the plan
    something, are the one rule that can forbid it; else the plan is optimal without them, so
    moving the workload alone cannot lower the total: what it shares would still be paid."""
    if plan.solver.status != "optimal":
        return (f"the solver stopped at a gap of {plan.solver.gap * 100:.2f}%, so a plan that runs it "
                "here may be cheaper")
    op = plan.operability
    free = op.unlimited if op is not None else None
    if free is not None and free.cost_usd < plan.total_cost_usd - 0.5:
        return (f"the spec's operability limits keep it elsewhere: the plan without them costs "
                f"{_money(plan.total_cost_usd - free.cost_usd)} less")
    return ("moving it alone would not make the plan cheaper: what it shares with other workloads "
            "(on-demand hours, reserved terms, bought nodes, storage) would still be paid")


def idle_owned(plan: Plan) -> tuple[IdleOwnedRow, ...]:
    return tuple(IdleOwnedRow(r.site, f"{r.site} {r.instance} (owned)", f"{r.idle_nodes} of {r.owned_nodes}",
                              plan.calendar.span(r.first_month, r.last_month), r.workload, _idle_why(r, plan))
                 for r in plan.idle_owned)


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _rows(amounts: dict[str, float], total: float, sort: bool = True) -> tuple[CostRow, ...]:
    items = sorted(amounts.items(), key=lambda kv: (-kv[1], kv[0])) if sort else list(amounts.items())
    return tuple(CostRow(k, v, _share(v, total)) for k, v in items)


def _with_remainder(amounts: dict[str, float], total: float) -> tuple[CostRow, ...]:
    """Rows that add up to the total: what cannot be attributed goes into one last row."""
    rows = _rows(amounts, total)
    rest = total - sum(amounts.values())
    if abs(rest) >= 0.5:  # below half a dollar it is rounding in plan.json, not a cost
        rows += (CostRow(UNATTRIBUTED, rest, _share(rest, total)),)
    return rows


def _workloads_carry_everything(plan: Plan) -> bool:
    """The optimizer charges every cost (storage, fabric, support...) to some workload, so
    workload costs add up to the total; a plan from elsewhere may leave storage apart.
    Counting storage again would charge it twice."""
    total = sum(w.cost_usd for w in plan.workloads)
    return abs(total - plan.total_cost_usd) <= max(1.0, 1e-6 * abs(plan.total_cost_usd))


def cost_by_site(plan: Plan) -> tuple[CostRow, ...]:
    """What each site bills (plan.json's cost_by_site_usd: its pools, its storage, the egress of
    data leaving it), nothing split by use; a site of the plan that bills nothing is a $0 row.
    A plan that does not record the bills puts the whole total in one row that says so, rather
    than guess a split."""
    amounts: dict[str, float] = {s.name: 0.0 for s in plan.sites}
    if not plan.cost_by_site_usd:
        return _rows({SITE_UNRECORDED: plan.total_cost_usd}, plan.total_cost_usd)
    for bill in plan.cost_by_site_usd:
        amounts[bill.site] = amounts.get(bill.site, 0.0) + bill.costs.total
    return _with_remainder(amounts, plan.total_cost_usd)


def cost_by_workload(plan: Plan) -> tuple[CostRow, ...]:
    amounts = {w.name: w.cost_usd for w in plan.workloads}
    storage = sum(s.cost_usd for s in plan.storage)
    if storage and not _workloads_carry_everything(plan):
        amounts["storage"] = storage
    return _with_remainder(amounts, plan.total_cost_usd)


def _pool_label(p: Pool) -> str:
    return f"{p.site} {p.instance} ({p.pricing})"


def _monthly_nodes(p: Pool, horizon: int) -> tuple[int, ...]:
    if p.monthly_nodes:
        return tuple(int(n) for n in p.monthly_nodes[:horizon]) + (0,) * max(0, horizon - len(p.monthly_nodes))
    return (int(p.nodes),) * horizon


def provided_gpus(p: Pool, horizon: int) -> tuple[int, ...]:
    """GPUs paid for in each month: on-prem pools all the time, cloud pools while they run."""
    if p.pricing in ON_PREM_PRICING:
        return (p.nodes * p.gpus_per_node,) * horizon
    return tuple(n * p.gpus_per_node for n in _monthly_nodes(p, horizon))


def utilization_row(p: Pool, horizon: int) -> UtilizationRow:
    series = tuple(float(u) for u in p.monthly_utilization[:horizon])
    provided = provided_gpus(p, horizon)
    pairs = [(u, g) for u, g in zip(series, provided) if g > 0]
    provided_total = sum(g for _, g in pairs)
    busy = sum(u * g for u, g in pairs)
    return UtilizationRow(
        pool=_pool_label(p), site=p.site, pricing=p.pricing, gpus=p.nodes * p.gpus_per_node,
        mean=_share(busy, provided_total),
        low=min((u for u, _ in pairs), default=0.0), high=max((u for u, _ in pairs), default=0.0),
        idle_gpu_months=provided_total - busy, series=series, provided=provided)


def fleet(plan: Plan) -> FleetView:
    sites = tuple(s.name for s in plan.sites)
    h = plan.horizon_months
    per_site = []
    for s in sites:
        total = [0] * h
        for p in plan.pools:
            if p.site == s:
                for m, n in enumerate(_monthly_nodes(p, h)):
                    total[m] += n * p.gpus_per_node
        per_site.append(tuple(total))
    spans: list[FleetSpan] = []
    for m in range(h):
        col = tuple(series[m] for series in per_site)
        if spans and spans[-1].gpus == col:
            spans[-1] = FleetSpan(spans[-1].first_month, m, col, plan.calendar)
        else:
            spans.append(FleetSpan(m, m, col, plan.calendar))
    return FleetView(sites=sites, monthly_gpus=tuple(per_site), spans=tuple(spans), calendar=plan.calendar)


def _number(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _estimate_items(w: WorkloadPlan) -> tuple[EstimateItem, ...]:
    """The estimate's figures of the workload's kind that the plan states (step_breakdown is its
    own table: time_shares)."""
    e = w.estimate
    items: list[EstimateItem] = []

    def take(value, label: str, fmt) -> None:
        if value is not None:
            items.append(EstimateItem(label, fmt(value)))

    if w.kind == "training":
        take(e.duration_hours, "Duration", lambda v: f"{_number(v, 1)} h ({v / 24:,.1f} days)")
        take(e.tokens_per_s, "Throughput", lambda v: f"{_number(v)} tokens/s")
        take(e.samples_per_s, "Throughput", lambda v: f"{_number(v, 1)} samples/s")
        take(e.mfu, "MFU", lambda v: f"{v * 100:.1f}%")
    elif e.images_per_s is not None:          # a vision model's service
        take(e.images_per_s, "Capacity at the latency bound", lambda v: f"{_number(v)} images/s")
        take(e.latency_ms, "Latency of a full batch", lambda v: f"{_number(v, 1)} ms")
        take(e.batch, "Batch per replica", lambda v: f"{int(v)} images")
        take(e.weights_gb, "Weights", lambda v: f"{_number(v, 2)} GB at 16 bits")
    else:
        take(e.tokens_per_s, "Capacity at the SLO", lambda v: f"{_number(v)} output tokens/s")
        take(e.ttft_ms, "TTFT", lambda v: f"{_number(v, 1)} ms")
        take(e.tpot_ms, "TPOT", lambda v: f"{_number(v, 1)} ms")
        take(e.batch, "Batch per replica", lambda v: str(int(v)))
        take(e.weights_gb, "Weights", lambda v: f"{_number(v, 1)} GB" + (f" at {w.quantization}" if w.quantization else ""))
    take(e.memory_gb_per_gpu, "Memory per GPU", lambda v: f"{_number(v, 1)} GB")
    take(e.notes or None, "Notes", lambda v: "; ".join(str(n) for n in v))
    return tuple(items)


def time_shares(w: WorkloadPlan) -> tuple[TimeShare, ...]:
    """The estimate's step_breakdown as rows, in its terms' order; terms with no share are left out."""
    shares = w.estimate.step_breakdown.shares if w.estimate.step_breakdown is not None else ()
    return tuple(TimeShare(TIME_SHARE_LABELS[s.term], float(s.share)) for s in shares if s.share)


def _headline(w: WorkloadPlan) -> str:
    e = w.estimate
    if w.kind == "training" and e.duration_hours is not None:
        if w.every:     # a recurring job: one line for all its runs
            return f"{e.duration_hours / 24:,.1f} days a run, {Period.parse(w.every).words} x {w.runs}"
        return f"{e.duration_hours / 24:,.1f} days"
    if w.kind == "inference" and e.tokens_per_s is not None:
        return f"{_number(e.tokens_per_s)} tok/s"
    if w.kind == "inference" and e.images_per_s is not None:
        return f"{_number(e.images_per_s)} img/s"
    return "-"


def _joined(values) -> str:
    return ", ".join(sorted(set(values)))


def _gpu_types(w: WorkloadPlan, pools: tuple[Pool, ...]) -> str:
    """The GPU types a workload runs on: an inference workload may span several pools."""
    by_pool = {(p.site, p.instance): p.gpu for p in pools}
    types = sorted({by_pool.get((pl.site, pl.instance), w.gpu) for pl in w.placements} or {w.gpu})
    return "/".join(types)


def _gpus_label(w: WorkloadPlan, pools: tuple[Pool, ...] = ()) -> str:
    if w.kind == "inference":
        # Most replicas and GPUs at once: each placement's own peak may fall in another month.
        replicas = w.replicas or sum(p.replicas for p in w.placements)   # older plan.json
        return f"{_count(replicas, 'replica')} on {w.gpus} x {_gpu_types(w, pools)}"
    return f"{w.gpus} x {_gpu_types(w, pools)}"


def _layout(w: WorkloadPlan) -> str:
    parts = [f"TP {w.layout.tp}", f"PP {w.layout.pp}"]
    if w.layout.cp > 1:           # the sequence split over GPUs: a factor of the GPUs like the others
        parts.append(f"CP {w.layout.cp}")
    parts.append(f"DP {w.layout.dp}")
    text = " x ".join(parts)
    if w.layout.ep > 1:           # folded over tensor x context x data, not a further factor
        text += f", EP {w.layout.ep}"
    if w.layout.recompute == "full":
        text += ", full recompute"
    return text


def _part_pricing(p: OptionPart) -> str:
    """A part's pricing as the report says it: bought on-prem nodes next to owned ones are counted."""
    if p.pricing == "purchase" and p.owned_nodes:
        return f"purchase ({_count(p.nodes - p.owned_nodes, 'new node')} + {p.owned_nodes} owned)"
    return p.pricing


def _alternative_row(a: Alternative, base: float, kind: str, chosen: str = "") -> AlternativeRow:
    """chosen: the chosen design's GPUs label (its replicas may differ in size)."""
    pricing = " + ".join(dict.fromkeys(_part_pricing(p) for p in a.parts)) if a.parts else a.pricing
    gpus = chosen or f"{a.gpus} x {a.gpu}" + (" a replica" if kind == "inference" else "")
    where = ("; ".join(f"{p.site} {p.instance} ({_part_pricing(p).replace('_', ' ')})" for p in a.parts)
             if a.parts else f"{a.site} {a.instance} ({a.pricing.replace('_', ' ')})")
    return AlternativeRow(a.site, a.instance, a.gpu, a.gpus, pricing, a.cost_usd, a.delta_usd,
                          _share(a.delta_usd, base), a.note, bool(chosen), gpus, where)


def _alone_base(w: WorkloadPlan) -> float | None:
    """The chosen design's cost alone: what every delta is taken against (a plan.json without
    chosen_alone still carries it in each alternative, as cost - delta)."""
    if w.chosen_alone is not None:
        return w.chosen_alone.cost_usd
    if w.alternatives:
        return w.alternatives[0].cost_usd - w.alternatives[0].delta_usd
    return None


def _alternatives(w: WorkloadPlan) -> tuple[AlternativeRow, ...]:
    base = _alone_base(w) or 0.0
    alts = sorted(w.alternatives, key=lambda a: (a.delta_usd, a.site, a.instance, a.pricing, a.gpus))
    return tuple(_alternative_row(a, base, w.kind) for a in alts)


def _money(usd: float) -> str:
    from compiler.render.environment import money
    return money(usd)


def _why(w: WorkloadPlan, alts: tuple[AlternativeRow, ...], pools: tuple[Pool, ...]) -> str:
    where = ", ".join(dict.fromkeys(f"{p.site} ({p.instance}, {p.pricing.replace('_', ' ')})"
                                    for p in w.placements))
    text = f"{w.name} runs as {_gpus_label(w, pools)} at {where} for {_money(w.cost_usd)}"
    if w.every:
        text += f" ({Period.parse(w.every).words}: {w.runs} runs, each on the same nodes)"
    base = _alone_base(w)
    if alts and base is not None:
        a = alts[0]
        option = f"{a.gpus_text} at {a.where}"
        text += f"; priced alone it would cost {_money(base)}, and the next best option, {option}, would cost "
        if round(a.delta_usd, 2) == 0:
            text += "the same"
        elif a.delta_usd > 0:
            text += f"{_money(a.delta_usd)} more"
        else:
            # alone leaves out what the plan shares (terms, bought nodes, storage) between workloads
            text += f"{_money(-a.delta_usd)} less"
    elif not alts:
        text += "; no other feasible option was found"
    return text + "."


def _spans(series: list[tuple]) -> list[tuple[int, int, tuple]]:
    """Runs of equal values: (first month, last month, value); empty values are left out."""
    out: list[tuple[int, int, tuple]] = []
    for m, v in enumerate(series):
        if out and out[-1][2] == v and out[-1][1] == m - 1:
            out[-1] = (out[-1][0], m, v)
        elif any(v):
            out.append((m, m, v))
    return out


def holding_spans(w: WorkloadPlan, calendar: Calendar = UNDATED) -> tuple[HoldingSpan, ...]:
    """The nodes a workload holds in each pool, per pricing, merged over equal months. A service
    with several placements (candidates) in a pool holds their replicas' node-hours all month,
    so it holds ceil(node-hours / 730) nodes of a pricing, not each placement's rounded up."""
    out = []
    for site, inst in sorted({(p.site, p.instance) for p in w.placements}):
        mine = [p for p in w.placements if (p.site, p.instance) == (site, inst)]
        months = max((len(h.monthly_nodes) for p in mine for h in p.holdings), default=0)
        series = []
        for m in range(months):
            held = {}
            for q in PRICINGS:
                hs = [h for p in mine for h in p.holdings if h.pricing == q and m < len(h.monthly_nodes)]
                n = sum(h.monthly_nodes[m] for h in hs)
                if w.kind == "inference" and len(mine) > 1:
                    n = min(n, math.ceil(sum(h.monthly_node_hours[m] for h in hs) / HOURS_PER_MONTH - 1e-6))
                held[q] = n
            series.append(tuple((q, n) for q, n in held.items() if n))
        for first, last, nodes in _spans(series):
            out.append(HoldingSpan(first, last, f"{site} {inst}", nodes, calendar))
    return tuple(sorted(out, key=lambda s: (s.first_month, s.where)))


def replica_spans(w: WorkloadPlan, calendar: Calendar = UNDATED) -> tuple[tuple[str, ...], tuple[ReplicaSpan, ...]]:
    """A service's replicas per site, month by month, merged over equal months."""
    if w.kind != "inference" or not any(p.monthly_replicas for p in w.placements):
        return (), ()
    by_site = site_replicas(w)
    sites = tuple(sorted(by_site))
    months = max(len(r) for r in by_site.values())
    series = [tuple(by_site[s][m] if m < len(by_site[s]) else 0 for s in sites) for m in range(months)]
    return sites, tuple(ReplicaSpan(a, b, v, calendar) for a, b, v in _spans(series))


def workload_view(w: WorkloadPlan, pools: tuple[Pool, ...] = (), calendar: Calendar = UNDATED) -> WorkloadView:
    alts = _alternatives(w)
    replica_sites, replicas_by_month = replica_spans(w, calendar)
    return WorkloadView(
        name=w.name, kind=w.kind, gpu=_gpu_types(w, pools), gpus=w.gpus, gpus_label=_gpus_label(w, pools),
        sites=_joined(p.site for p in w.placements), pricing=_joined(p.pricing for p in w.placements),
        site_names=tuple(sorted({p.site for p in w.placements})),
        pricings=tuple(sorted({p.pricing for p in w.placements})),
        layout=_layout(w), orchestrator=w.orchestrator, start_month=w.start_month,
        cost_usd=w.cost_usd,
        placements=tuple(PlacementRow(p.site, p.instance, p.pricing, p.nodes, p.gpus, p.replicas,
                                      p.gpus_per_replica, p.disaggregation) for p in w.placements),
        estimate=_estimate_items(w), headline=_headline(w), alternatives=alts, why=_why(w, alts, pools),
        chosen_alone=(_alternative_row(w.chosen_alone, w.chosen_alone.cost_usd, w.kind, _gpus_label(w, pools))
                      if w.chosen_alone is not None else None),
        holdings=holding_spans(w, calendar), replica_sites=replica_sites, replicas_by_month=replicas_by_month,
        time_shares=time_shares(w), calendar=calendar)


def _breakeven_row(b: BreakEven) -> BreakevenRow:
    months, util = b.breakeven_months, b.breakeven_utilization
    if b.owned:
        verdict = ("already owned: no capex, and its power costs less than renting, so it is the "
                   "cheaper whenever it runs" if months is not None
                   else "already owned, yet renting costs less than its power")
    elif months is None:
        verdict = "renting stays cheaper: buying never pays off at this price"
    else:
        verdict = f"buying pays off after {months:,.1f} months of full use"
        if util is not None:
            verdict += (f"; over the horizon, a GPU busy more than {util * 100:.0f}% of the time "
                        "is cheaper bought")
    basis = ("owned" if b.owned else f"bought, {b.on_prem_fabric}" if b.on_prem_fabric
             else "bought" if b.on_prem_basis == "purchase" else "")
    on_prem = f"{b.on_prem_site} {b.on_prem_instance}".strip()
    return BreakevenRow(
        gpu=b.gpu, on_prem=f"{on_prem} ({basis})" if basis else on_prem,
        cloud=f"{b.cloud_site} {b.cloud_instance} ({b.cloud_pricing})",
        capex_per_gpu=b.on_prem_capex_usd_per_gpu, opex_per_gpu_month=b.on_prem_opex_usd_per_gpu_month,
        cloud_per_gpu_month=b.cloud_usd_per_gpu_month, months=months, utilization=util, verdict=verdict,
        note=b.note or "")


def _site_view(plan: Plan, s, catalog: Catalog | None, fleet_view: FleetView) -> SiteView:
    gpus = catalog.gpus if catalog is not None else {}
    pools = tuple(PoolRow(p.site, p.instance, p.gpu, p.gpus_per_node, p.nodes, p.nodes * p.gpus_per_node,
                          p.pricing, p.fabric, gpus[p.gpu].memory_gb if p.gpu in gpus else None)
                  for p in plan.pools if p.site == s.name)
    where = f"{s.provider} {s.region}" if s.type == "cloud" else "on-prem"
    return SiteView(s.name, s.type, where, ", ".join(s.orchestrators) or "-", pools,
                    fleet_view.site_peak(s.name))


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _shape(w: WorkloadPlan) -> tuple:
    """What repeats of one job share. plan.json names no model: at one layout, the memory per GPU
    (and a service's weights) stands for it, so two models of one shape are not taken for one."""
    e = w.estimate
    return (w.kind, w.gpu, w.gpus, w.layout, w.orchestrator, round(float(e.memory_gb_per_gpu or 0.0), 1),
            round(float(e.weights_gb or 0.0), 1))


def workload_groups(plan: Plan, views: tuple[WorkloadView, ...]) -> tuple[WorkloadGroup, ...]:
    """The workloads with repeats folded (WorkloadGroup), ordered by their first member's name."""
    by_name = {w.name: w for w in views}
    groups: dict[tuple, list[WorkloadView]] = {}
    for w in sorted(plan.workloads, key=lambda w: w.name):
        stem = w.repeat_stem
        key = (stem, _shape(w)) if stem is not None else (w.name, None)
        groups.setdefault(key, []).append(by_name[w.name])
    out = [WorkloadGroup(stem if len(members) > 1 else members[0].name, tuple(members), plan.calendar)
           for (stem, _shape_key), members in groups.items()]
    return tuple(sorted(out, key=lambda g: g.first.name))


def _by_kind(plan: Plan) -> list[str]:
    """One line per kind: how many workloads, what they cost, and at which sites (a workload at
    several sites counts at each; its cost is not split, so no per-site share is claimed)."""
    lines = []
    for kind, noun in (("training", "job"), ("inference", "service")):
        ws = [w for w in plan.workloads if w.kind == kind]
        if not ws:
            continue
        at: dict[str, int] = {}
        for w in ws:
            for site in sorted({p.site for p in w.placements}):
                at[site] = at.get(site, 0) + 1
        where = ", ".join(f"{s} {n}" for s, n in sorted(at.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"{kind.capitalize()}: {_count(len(ws), noun)}, {_money(sum(w.cost_usd for w in ws))} in all"
                     + (f"; {noun}s per site: {where}" if where else "") + ".")
    return lines


def _summary(plan: Plan, by_category: tuple[CostRow, ...],
             solver: SolverView, binding: tuple[ConstraintRow, ...], fleet_view: FleetView,
             groups: tuple[WorkloadGroup, ...]) -> tuple[str, ...]:
    lines = []
    cloud_sites = [s.name for s in plan.sites if s.type == "cloud"]
    onprem_sites = [s.name for s in plan.sites if s.type == "on_prem"]
    used = {p.site for w in plan.workloads for p in w.placements}
    mix = ("hybrid" if used & set(cloud_sites) and used & set(onprem_sites)
           else "cloud-only" if used & set(cloud_sites) else "on-prem-only")
    top = by_category[0] if by_category else None
    n_sites = len({p.site for p in plan.pools})
    text = (f"{'An' if mix[0] in 'aeiou' else 'A'} {mix} design: {fleet_view.peak_gpus:,} GPUs in use at the "
            f"peak ({plan.calendar.month(fleet_view.peak_month)}) in "
            f"{_count(len(plan.pools), 'pool')} across {_count(n_sites, 'site')}, "
            f"{_money(plan.total_cost_usd)} over "
            f"{plan.horizon_months} months")
    if top and top.usd > 0:
        text += f"; {top.label.replace('_', ' ')} is the largest cost ({top.share * 100:.0f}%)"
    lines.append(text + ".")
    lines.extend(_by_kind(plan))
    lines.extend(g.line for g in groups)
    name = SOLVER_NAMES.get(solver.name, solver.name)
    if solver.optimal:
        lines.append(f"The solver ({name}) found this plan {solver.status} within a gap of "
                     f"{solver.gap * 100:.2f}% of the best bound.")
    else:
        lines.append(f"The solver ({name}) stopped with status '{solver.status}' at a gap of "
                     f"{solver.gap * 100:.2f}%: a cheaper plan may exist"
                     + (f". {solver.gap_note}." if solver.gap_note else "."))
    if binding:
        groups = sorted({b.family for b in binding})
        lines.append(f"{len(binding)} constraints are binding ({', '.join(groups)}): "
                     "relaxing them is what would make this design cheaper.")
    return tuple(lines)


def handovers(plan: Plan, catalog: Catalog | None) -> tuple[HandoverRow, ...]:
    """The node schedule where owned, bought or reserved nodes change hands (the rows of
    schedule/<site>.csv for those blocks; none without a catalog to shape the nodes)."""
    if catalog is None:
        return ()
    from compiler.render.site import site_view
    out = []
    for s in sorted(plan.sites, key=lambda s: s.name):
        for row in site_view(plan, catalog, s).handovers:
            if row.count:
                out.append(HandoverRow(row.site, plan.calendar.span(row.month_first, row.month_last),
                                       row.orchestrator, f"{row.domain} / {row.pricing}", row.names))
    return tuple(out)


def bought(plan: Plan, catalog: Catalog | None) -> tuple[BoughtRow, ...]:
    """Bought nodes: bom.csv lists them at full price; the plan charges the horizon's share."""
    if catalog is None:
        return ()
    out = []
    for p in plan.pools:
        node = catalog.onprem_nodes.get(p.instance)
        if p.pricing == "purchase" and node is not None and p.nodes:
            life = node.useful_life_years
            out.append(BoughtRow(p.site, p.instance, p.nodes, node.capex_usd, life,
                                 min(1.0, plan.horizon_months / (life * 12.0))))
    return tuple(out)


def slack_rows(plan: Plan) -> tuple[SlackRow, ...]:
    rows = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "training":
            continue
        duration = float(w.estimate.duration_hours or 0.0) / 24
        if w.deadline_days is not None:
            limit, deadline = float(w.deadline_days), True
        elif w.every:   # a recurring job's run must end before the next starts
            limit, deadline = Period.parse(w.every).days, True
        else:
            limit, deadline = (plan.horizon_months - w.start_month) * HOURS_PER_MONTH / 24, False
        rows.append(SlackRow(w.name, duration, limit, deadline, limit - duration,
                             _share(limit - duration, limit)))
    return tuple(rows)


def spot_shares(plan: Plan) -> tuple[SpotShareRow, ...]:
    rows = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        hours = {"spot": 0.0, "all": 0.0}
        for p in w.placements:
            for h in p.holdings:
                run = sum(h.monthly_node_hours)
                hours["all"] += run
                if h.pricing == "spot":
                    hours["spot"] += run
        if w.kind == "training" or hours["spot"]:
            rows.append(SpotShareRow(w.name, hours["spot"], hours["all"], _share(hours["spot"], hours["all"])))
    return tuple(rows)


def spot_fleets(plan: Plan, threshold: int) -> tuple[SpotFleetRow, ...]:
    sites = {s.name: s for s in plan.sites}
    asked: dict[tuple[str, str], list[int]] = {}
    gpus_per_node: dict[tuple[str, str], int] = {}
    for p in plan.pools:
        if p.pricing != "spot":
            continue
        s = sites.get(p.site)
        where = f"{s.provider} {s.region}" if s is not None and s.provider else p.site
        key = (p.instance, where)
        gpus_per_node[key] = p.gpus_per_node
        add_into(asked.setdefault(key, []), _monthly_nodes(p, plan.horizon_months))
    rows = []
    for (instance, where), series in asked.items():
        peak = max(series, default=0)
        if peak <= 0:
            continue
        rows.append(SpotFleetRow(instance, where, peak, peak * gpus_per_node[(instance, where)],
                                 series.index(peak), bool(threshold) and peak >= threshold, plan.calendar))
    return tuple(sorted(rows, key=lambda r: (-r.nodes, r.instance, r.where)))


def single_site_services(plan: Plan) -> tuple[SingleSiteRow, ...]:
    rows = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "inference":
            continue
        serving = sorted({p.site for p in w.placements if p.replicas > 0})
        if len(serving) == 1:
            rows.append(SingleSiteRow(w.name, serving[0]))
    return tuple(rows)


def risk(plan: Plan, catalog: Catalog | None) -> RiskView:
    factor = catalog.factors.get(SPOT_FLEET_FACTOR) if catalog is not None else None
    threshold = int(factor.value) if factor is not None else 0
    source = catalog.sources.get(factor.source) if factor is not None else None
    cited = f"{source.title} ({source.url}, as of {source.as_of})" if source is not None else ""
    return RiskView(slack_rows(plan), spot_shares(plan), spot_fleets(plan, threshold), threshold,
                    single_site_services(plan), cited)


def build(plan: Plan, catalog: Catalog | None = None, baseline: Plan | None = None) -> ReportView:
    """The report's view model. The catalog only adds hardware figures: the Plan is self-contained.
    `baseline`: the plan this one re-plans; the summary and the order of the workloads then lead
    with what changes against it (replan.py)."""
    h = plan.horizon_months
    total = plan.total_cost_usd
    solver = SolverView(plan.solver.name, plan.solver.status, plan.solver.objective_usd,
                        plan.solver.best_bound_usd, plan.solver.gap, plan.solver.seconds,
                        plan.solver.status == "optimal", plan.solver.gap_note, plan.solver.searched)
    by_category = _rows({x.category: x.usd for x in plan.cost_breakdown_usd.lines if x.usd}, total)
    workloads = tuple(workload_view(w, plan.pools, plan.calendar)
                      for w in sorted(plan.workloads, key=lambda w: w.name))
    binding = tuple(ConstraintRow(b.name, b.meaning, b.family) for b in plan.binding_constraints)
    monthly = sum(plan.monthly_cost_usd) / len(plan.monthly_cost_usd) if plan.monthly_cost_usd else total / h
    fleet_view = fleet(plan)
    delta = None if baseline is None else changes(plan, baseline)
    if delta is not None:
        workloads = replan.changed_first(replan.marked(workloads, delta), delta)
    groups = workload_groups(plan, workloads)
    if delta is not None:
        groups = replan.changed_first(groups, delta, lambda g: [w.name for w in g.members])
    summary = _summary(plan, by_category, solver, binding, fleet_view, groups)
    if delta is not None:
        summary = replan.summary(delta) + summary
    return ReportView(
        spec_name=plan.spec_name, spec_sha256=plan.spec_sha256, catalog_version=plan.catalog_version,
        prices_as_of=plan.prices_as_of, horizon_months=h, total_cost_usd=total, monthly_average_usd=monthly, solver=solver,
        summary=summary,
        by_category=by_category, by_site=cost_by_site(plan), by_workload=cost_by_workload(plan),
        sites=tuple(_site_view(plan, s, catalog, fleet_view) for s in plan.sites),
        fleet=fleet_view,
        utilization=tuple(utilization_row(p, h) for p in plan.pools),
        binding=binding, workloads=workloads,
        breakeven=tuple(_breakeven_row(b) for b in plan.breakeven),
        breakeven_notes=tuple(dict.fromkeys((b.gpu, b.note)
                                            for b in plan.breakeven if b.note)),
        storage=tuple(StorageRow(s.site, s.tier, s.capacity_tb, s.cost_usd) for s in plan.storage),
        handovers=handovers(plan, catalog), bought=bought(plan, catalog),
        risk=risk(plan, catalog),
        idle_owned=idle_owned(plan),
        operability=operability.build(plan),
        commitments=commitments.build(plan),
        held=commitments.held(plan) if plan.held else None,
        owned_ages=commitments.owned_ages(plan) if plan.owned_ages else None,
        savings_plans=commitments.savings_plans(plan, catalog) if plan.savings_plans.bought else None,
        capacity_blocks=commitments.capacity_blocks(plan, catalog) if plan.capacity_blocks else None,
        workload_groups=groups,
        by_site_rule=SITE_RULE if plan.cost_by_site_usd else SITE_RULE_UNRECORDED,
        by_workload_rule=WORKLOAD_RULE,
        calendar=plan.calendar,
        changes=delta,
        edge=edge.build(plan, catalog),
    )
