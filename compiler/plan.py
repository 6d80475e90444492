"""The Plan: the solved design, and its JSON form (plan.json, see schemas/plan.schema.json).

The Plan is self-contained: render, report and diff read only the Plan (and the
catalog for hardware figures), never the solver. Keys are sorted and floats rounded
when written so the same plan gives the same bytes on every machine.

plan.json states its `schema_version` (SCHEMA_VERSION). from_dict reads a document of this
version only; compiler/plan_reader.py upgrades a plan.json an older compiler wrote (VERSIONS)
before anything else reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping


# The version of plan.json this compiler writes; a later field or meaning raises it, and
# compiler/plan_reader.upgrade says what an older file's missing keys meant.
SCHEMA_VERSION = 2
VERSIONS = {
    1: "no schema_version key: written before 2026-11-29; any field added after the first plan.json "
       "(holdings, monthly series, placement layouts, after_horizon, idle_owned ...) may be missing",
    2: "schema_version stated; every key the schema requires is present",
}

# How SolverInfo.gap_note begins for the improving rounds' plan taken without a search
NO_SEARCH_NOTE = "This is the improving rounds' plan, with no branch-and-bound search"
# ... and for the month windows' plan on a small platform
MONTHS_NOTE = "This is the month windows' plan, with no branch-and-bound search"


@dataclass(frozen=True)
class SolvePath:
    """The solve path that ran (compiler/optimize/strategy.py): its name, the steps it ran, and why
    it was chosen. Empty for a plan no solve made (the greedy start priced alone)."""
    path: str = ""                # search | months | rounds | rounds-only
    steps: tuple[str, ...] = ()   # greedy start, month floors, month windows, ..., polish
    why: str = ""


@dataclass(frozen=True)
class SolverInfo:
    name: str                     # cbc | highs
    status: str                   # optimal | feasible (time limit, incumbent) | ...
    objective_usd: float
    best_bound_usd: float
    gap: float                    # relative: (objective - bound) / objective
    seconds: float
    gap_note: str = ""            # what the gap means for this plan, and where the bound is weak
    strategy: SolvePath = SolvePath()
    # a re-plan (--baseline): what the plan's moves add to the objective (policy.replan), so
    # objective_usd = total_cost_usd + moves_usd; the gap is the objective's
    moves_usd: float = 0.0

    @property
    def searched(self) -> bool:
        """Whether a branch-and-bound search ran (not the rounds' or windows' plan taken as it is)."""
        return "branch-and-bound" in self.strategy.steps


@dataclass(frozen=True)
class SitePlan:
    name: str
    type: str                     # cloud | on_prem
    provider: str | None          # aws | gcp | azure; None on-prem
    region: str | None
    orchestrators: tuple[str, ...]  # slurm / kubernetes, from the workloads placed here


PRICINGS = ("owned", "purchase", "reserved_3y", "reserved_1y", "on_demand", "spot")  # allotment order


@dataclass(frozen=True)
class Reservation:
    start_month: int              # first month of the term
    nodes: int                    # nodes reserved for the whole term (priced for the months it covers)


@dataclass(frozen=True)
class Pool:
    site: str
    instance: str
    gpu: str
    gpus_per_node: int
    nodes: int                    # what Terraform / the BOM provides: owned: the nodes owned;
                                  # purchase: bought; others: the peak of monthly_nodes
    pricing: str                  # on_demand | spot | reserved_1y | reserved_3y | owned | purchase
    fabric: str
    monthly_nodes: tuple[int, ...] = ()       # nodes of this pricing in each month (owned/purchase:
                                              # in use; reserved: reserved; on_demand/spot: rented)
    monthly_utilization: tuple[float, ...] = ()  # GPUs busy / GPUs provided, month by month
    monthly_node_hours: tuple[float, ...] = ()   # node-hours per month: on_demand, spot: billed (what
                                              # the placements may run); reserved, owned, purchase: run
    reservations: tuple[Reservation, ...] = ()   # reserved pools: the terms bought, by start month


@dataclass(frozen=True)
class Holding:
    """The nodes one placement holds of one pricing, month by month (DESIGN.md section 5; the
    rule that allots them is compiler/readback/allot.py).
    Invariants: monthly_nodes[m] <= the pool of that pricing's monthly_nodes[m]; per pool,
    pricing and month the placements' node-hours add up to no more than the pool provides (730 h
    per reserved, owned or bought node; on_demand and spot: the pool's monthly_node_hours); a
    placement's holdings add up, month by month, to the node-hours it runs."""
    pricing: str                  # owned | purchase | reserved_1y | reserved_3y | on_demand | spot
    monthly_nodes: tuple[int, ...]          # nodes held in each month of the horizon
    monthly_node_hours: tuple[float, ...]   # node-hours run on them in each month


@dataclass(frozen=True)
class LayoutPlan:
    """Every parallel degree the estimate sized: tp x pp x cp x dp = GPUs (training) or GPUs per
    replica (inference: dp = 1, or dp = ep > 1 where the replica runs attention data parallel with
    its experts expert parallel); experts are folded over the tensor-, context- and data-parallel
    ranks (whole experts per rank), so ep divides tp x cp x dp."""
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1                   # context parallel: the sequence split over cp GPUs
    recompute: str = "selective"  # activation recompute the memory was sized for: selective | full


@dataclass(frozen=True)
class DisaggregationPlan:
    """A disaggregated placement's replica unit: prefill_instances servers of prefill_tp GPUs and
    decode_instances servers of decode_tp GPUs (plan.json's placements[].disaggregation); its
    replicas are units, its gpus_per_replica the unit's GPUs."""
    prefill_tp: int
    prefill_instances: int
    decode_tp: int
    decode_instances: int


@dataclass(frozen=True)
class Placement:
    site: str
    instance: str
    pricing: str                  # the holding with the most node-hours (ties: PRICINGS order)
    nodes: int                    # peak nodes held at once, all pricings together (training: the
                                  # job's nodes; inference: ceil(replicas x GPUs each / per node))
    gpus: int                     # peak GPUs held at once (inference: replicas x gpus_per_replica)
    replicas: int = 0             # inference only (peak over the horizon)
    candidate: str = ""           # the estimate's candidate id (`infra-compile estimate`)
    gpus_per_replica: int = 0     # inference only
    holdings: tuple[Holding, ...] = ()       # per pricing, in PRICINGS order
    monthly_replicas: tuple[int, ...] = ()   # inference only: replicas here in each month
    # The layout its candidate was sized at (inference: each candidate has its own tensor
    # parallel degree, and the server must be told that one, not the workload's main one).
    layout: LayoutPlan = LayoutPlan()
    batch: int = 0                # inference only: concurrent sequences per replica it was sized at
    # inference only: prefill and decode as separate pools (None: colocated replicas; no key)
    disaggregation: DisaggregationPlan | None = None


@dataclass(frozen=True)
class OptionPart:
    """One (site, instance) of an option priced alone (compiler/appraise/alternatives.py has the
    rule); its figures are what the cost is recomputed from."""
    site: str
    instance: str
    gpu: str
    gpus: int                     # training: GPUs held; inference: GPUs per replica (the most)
    pricing: str                  # on_demand | spot | reserved_1y | reserved_3y | owned | purchase
                                  # (on-prem: purchase when any of its nodes is bought)
    nodes: int                    # the most nodes held at once
    owned_nodes: int              # of them, nodes the site already owns (power only)
    node_hours: float             # node-hours run over the horizon
    first_month: int              # the months it runs (a reserved term starts at the first)
    last_month: int
    cost_usd: float
    fabric: str = ""              # on-prem: the wiring each bought node is charged
    egress_tb: float = 0.0        # dataset TB moved away from its home


@dataclass(frozen=True)
class Alternative:
    """An option for a workload priced alone. site, instance and pricing join its parts' (' + ')
    where it has several; gpus is its first part's."""
    site: str
    instance: str
    gpu: str
    gpus: int
    pricing: str
    cost_usd: float               # the sum of its parts' costs
    delta_usd: float              # cost_usd - the chosen design's cost_usd, both priced alone
    note: str = ""
    parts: tuple[OptionPart, ...] = ()


@dataclass(frozen=True)
class StepShare:
    term: str                     # a StepBreakdown field: compute, exposed_dp, lost ...
    share: float


@dataclass(frozen=True)
class StepBreakdown:
    """Where a training run's wall time goes: each term's share of duration_hours, the stated
    shares summing to 1 (docs/performance-model.md, "Step-time breakdown"; plan.json's
    estimate.step_breakdown). None: a term the estimate does not state (no key in plan.json)."""
    compute: float | None = None          # arithmetic at the GPU's base MFU
    recompute: float | None = None        # full activation recompute
    moe_gemm: float | None = None         # MoE experts beyond their FLOPs at the dense rate
    exposed_tp: float | None = None
    exposed_cp: float | None = None
    exposed_ep: float | None = None
    exposed_pp: float | None = None
    pipeline_bubble: float | None = None
    exposed_dp: float | None = None
    data_loading: float | None = None     # vision: GPUs waiting for the data loader
    lost: float | None = None             # interruptions, restarts, checkpoint stalls

    @property
    def shares(self) -> tuple[StepShare, ...]:
        """The stated terms in this order (zeros included)."""
        return tuple(StepShare(f.name, v) for f in fields(self) if (v := getattr(self, f.name)) is not None)


@dataclass(frozen=True)
class Figure:
    name: str                     # an EstimateFigures field: tokens_per_s, mfu ...
    value: float


@dataclass(frozen=True)
class EstimateFigures:
    """What the estimate sized a workload at (plan.json's workloads[].estimate): training:
    memory, duration, MFU, tokens/s (LLM) or samples/s (vision), where the time goes; inference:
    memory, capacity (tokens/s of all replicas at the SLO), TTFT, TPOT, batch, weights; a vision
    model's service: capacity in images/s, the batch's latency, batch, weights. None: a figure the
    plan does not state (the other kind's, or an older plan.json's): no key written."""
    memory_gb_per_gpu: float | None = None
    duration_hours: float | None = None       # training: wall clock, lost time included
    mfu: float | None = None                  # training
    tokens_per_s: float | None = None         # training (LLM): the job's; inference: capacity at the SLO
    samples_per_s: float | None = None        # training (vision)
    step_breakdown: StepBreakdown | None = None   # training
    ttft_ms: float | None = None              # inference
    tpot_ms: float | None = None              # inference
    batch: int | None = None                  # inference: concurrent sequences per replica
    weights_gb: float | None = None           # inference: the weights at the quantized width
    images_per_s: float | None = None         # a vision service: capacity, images/s of all replicas
    latency_ms: float | None = None           # a vision service: a batch's latency at its batch (p99 bound)
    notes: tuple[str, ...] = ()               # estimator remarks

    @property
    def figures(self) -> tuple[Figure, ...]:
        """The stated numbers, by name in field order (step_breakdown and notes are not numbers)."""
        return tuple(Figure(f.name, v) for f in fields(self)
                     if isinstance(v := getattr(self, f.name), (int, float)) and not isinstance(v, bool))


@dataclass(frozen=True)
class InputField:
    path: str                     # dotted: traffic.peak_rps
    value: Any                    # a JSON value other than an object: number, text, bool, list


@dataclass(frozen=True)
class SpecInputs:
    """The workload's spec as the user stated it, parsed and canonical (compiler/readback/inputs.py;
    plan.json's workloads[].inputs), for a diff to say which spec lines changed."""
    # Kept as the canonical JSON text, not as typed fields: the spec is free-form (any nesting,
    # lists, empty objects), and text gives plan.json back byte for byte; `fields` types the reading.
    text: str

    @classmethod
    def of(cls, document: Any) -> "SpecInputs":
        return cls(json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False))

    @property
    def document(self) -> Any:
        """The JSON value (an object as the compiler writes it)."""
        return json.loads(self.text)

    @property
    def fields(self) -> tuple[InputField, ...]:
        """Every value that is not an object, by dotted path, in sorted order:
        {"traffic": {"peak_rps": 20}} -> (traffic.peak_rps, 20). Nothing for a document that is
        no object."""
        out: list[InputField] = []

        def walk(value: Any, prefix: str) -> None:
            for k, v in sorted(value.items()):
                if isinstance(v, dict):
                    walk(v, f"{prefix}{k}.")
                else:
                    out.append(InputField(f"{prefix}{k}", v))
        doc = self.document
        if isinstance(doc, dict):
            walk(doc, "")
        return tuple(out)

    def value(self, path: str) -> Any:
        """The value at a dotted path (an object's as a dict), or None where the spec states none."""
        node = self.document
        for key in path.split("."):
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    kind: str
    gpu: str
    gpus: int
    layout: LayoutPlan
    placements: tuple[Placement, ...]
    estimate: EstimateFigures
    cost_usd: float
    orchestrator: str
    start_month: int = 0
    alternatives: tuple[Alternative, ...] = ()
    replicas: int = 0             # inference: the most replicas running at once (training: 0)
    chosen_alone: Alternative | None = None   # the chosen design priced as its alternatives are
    quantization: str = ""        # inference (LLM): weights and KV cache width sized (bf16|fp8|fp4|int8|int4)
    max_model_len: int = 0        # inference (LLM): tokens per sequence the KV cache was sized for
    # training: the spec's deadline in days from its start month (None: none, it may run to the
    # end of the horizon); inference: None
    deadline_days: float | None = None
    availability: float = 0.0     # inference: slo.availability (0.999 or more: N+1 across sites)
    # training that recurs (window.every, compiler/recurrence.py): its period ("7d", "1mo") and
    # how many runs the horizon holds; the placement holds each run's nodes, its cost is all runs'
    every: str | None = None
    runs: int = 0
    # The workload's spec as the user stated it (compiler/readback/inputs.py), so a diff can say
    # which spec lines changed; None: a plan.json written before plans recorded them.
    inputs: SpecInputs | None = None

    @property
    def repeat_stem(self) -> str | None:
        """The name without a numeric or date suffix ("-01", "_7", "-2027-01", ".3", after a
        letter, so a model size such as "llama-3-8b" keeps its digits): what repeats of one job
        named as a series share ("pretrain-01", "pretrain-02" -> "pretrain"); None: no suffix."""
        m = _REPEAT_SUFFIX.match(self.name)
        return m.group(1).rstrip("-_.") if m else None


# A workload name's numeric or date suffix (WorkloadPlan.repeat_stem).
_REPEAT_SUFFIX = re.compile(r"^(.*[A-Za-z])[-_.]?\d+(?:[-_.]\d+)*$")


@dataclass(frozen=True)
class StoragePlan:
    site: str
    tier: str
    capacity_tb: float
    cost_usd: float
    monthly_tb: tuple[float, ...] = ()      # TB provisioned in each month


@dataclass(frozen=True)
class UnlimitedPlan:
    """The plan solved again without the operability limits, with the same search budget: what
    the limits cost is the difference, within the two plans' gaps (docs/artifacts.md)."""
    cost_usd: float
    best_bound_usd: float
    status: str
    most_instance_types: int          # the most instance types one service runs at one site
    shortest_mix_hold: int | None     # fewest months between two changes of a service's mix
                                      # (its start counts as one); None: no mix ever changes
    most_spot_share: float            # the largest share of a training job's node-hours on spot
    most_sites: int = 0               # the most sites one service runs replicas at
    most_gpu_types: int = 0           # the most GPU types one service runs replicas on
    shortest_pool_life: int | None = None   # the fewest consecutive months a cloud pool carries
                                            # replicas, a run cut by the horizon's end aside; None: none


@dataclass(frozen=True)
class LimitAlone:
    """The plan solved with one operability limit only (where two or more bind): its price alone."""
    key: str                          # the policy key
    cost_usd: float
    best_bound_usd: float


@dataclass(frozen=True)
class OperabilityPlan:
    """The spec's operability limits (policy) and the plan without them; only where the spec
    sets one."""
    max_instance_types_per_site: int | None = None
    min_months_per_mix: int | None = None
    max_spot_share: float | None = None
    max_sites_per_service: int | None = None
    max_gpu_types_per_service: int | None = None
    min_pool_months: int | None = None
    unlimited: UnlimitedPlan | None = None     # None where that solve found no plan
    alone: tuple[LimitAlone, ...] = ()         # where two or more limits bind: each one alone


@dataclass(frozen=True)
class Commitment:
    """What one pool commits to after the horizon (docs/optimizer.md, "Commitments that outlive
    the horizon"): reserved terms that end after it, or bought nodes whose useful life does."""
    site: str
    instance: str
    pricing: str                  # reserved_1y | reserved_3y | purchase
    nodes: int                    # reserved nodes whose term ends after the horizon; nodes bought
    node_months: float            # node-months after the horizon (bought: of useful life, from month 0)
    committed_usd: float          # what those months cost: the term's rate; capex straight line
    charged_usd: float            # what the plan pays for them: none (prorated); all (full); the idle
                                  # ones (continues)


@dataclass(frozen=True)
class Held:
    """A commitment already bought at a cloud site (the spec's `reserved`): paid to its end
    whatever the plan does, so its cost is sunk, shown apart from the plan's total; its nodes
    are the plan's to use first in the months it covers."""
    site: str
    instance: str
    term: str                     # reserved_1y | reserved_3y: the rate it is paid at
    nodes: int
    until_month: int              # the first month of the horizon it no longer covers
    sunk_usd: float               # what it costs from month 0 to its end, at its term's rate
    monthly_used: tuple[float, ...] = ()   # its nodes the plan runs work on, month by month


@dataclass(frozen=True)
class OwnedAge:
    """Owned on-prem nodes whose purchase the spec dates (`owned[].bought`): their useful life runs
    from then, so they serve the plan until it ends, and what is left of their price at the plan's
    start (straight-line) is sunk: paid, not the plan's to decide, not in its total."""
    site: str
    instance: str
    nodes: int
    bought: str                   # YYYY-MM
    life_ends: str                # YYYY-MM: bought + the node model's useful life
    retires_month: int | None     # the month of the horizon it ends (None: after the horizon)
    book_usd: float               # capex x nodes x the share of its life left at the plan's start


@dataclass(frozen=True)
class TailCredit:
    """Under `continues`: replicas of one placement in the horizon's last month whose load is
    credited as continuing after it (at most the replicas it runs; a service's credits together
    carry no more than the traffic the spec forecasts for that month)."""
    workload: str
    candidate: str
    site: str
    instance: str
    replicas: float


@dataclass(frozen=True)
class AfterHorizon:
    """policy.after_horizon and every commitment that outlives the horizon, by pool and pricing."""
    rule: str = "prorated"        # prorated | full | continues
    commitments: tuple[Commitment, ...] = ()
    credits: tuple[TailCredit, ...] = ()     # continues only: the last month's load it credits

    @property
    def committed_usd(self) -> float:
        return sum(c.committed_usd for c in self.commitments)

    @property
    def charged_usd(self) -> float:
        return sum(c.charged_usd for c in self.commitments)


@dataclass(frozen=True)
class SavingsPlanBought:
    """One AWS Savings Plan the plan buys (docs/savings-plans.md): a commitment in USD per hour
    for its term, bought in a month, covering the on-demand usage of the sites that list the term."""
    term: str                     # savings_plan_1y | savings_plan_3y
    start_month: int              # the month it is bought (its term runs from there)
    usd_per_hour: float           # the commitment
    sites: tuple[str, ...]        # the sites whose on-demand usage it covers


@dataclass(frozen=True)
class SavingsPlanCover:
    """The on-demand node-hours of one pool a term's Savings Plans cover, month by month (billed at
    the plan's rate out of the commitment, not on demand)."""
    site: str
    instance: str
    term: str
    monthly_node_hours: tuple[float, ...]
    monthly_level_node_hours: tuple[float, ...] = ()   # of which usage that runs all month


@dataclass(frozen=True)
class SavingsPlanIdle:
    """Under `continues`: the months after the horizon in which a term's commitments are paid for
    the part the last month's covered usage leaves unused."""
    term: str
    first_month: int              # the run's first month (after the horizon)
    months: int
    credit_usd_per_hour: float    # the commitment the last month's covered usage is credited with
    idle_usd_per_hour: float      # the commitment left unused in those months
    charged_usd: float


@dataclass(frozen=True)
class CapacityBlock:
    """One Capacity Block the plan buys for a training job (docs/capacity-blocks.md; on GCP a
    calendar-mode reservation): the job's nodes for `days` days from the start of its window's
    month, paid in full. Its instances run as
    on-demand ones launched into it, so the job's pool bills their node-hours on demand and the
    block credits them back: it costs cost_usd less the on-demand price of monthly_node_hours."""
    workload: str
    site: str
    instance: str
    nodes: int                    # instances reserved (the job's nodes)
    blocks: int                   # blocks they are bought as (each at most the provider's limit, or
                                  # one UltraServer each where the type's blocks are UltraServers)
    start_month: int              # the month its window starts: the block starts on its first day
    days: int                     # the job's run rounded up to a block's length
    usd_per_hour: float           # the block's rate per instance-hour
    cost_usd: float               # usd_per_hour x instances paid for (nodes, or whole UltraServers)
                                  # x 24 x days, all of it
    monthly_node_hours: tuple[float, ...]   # the job's node-hours on it, month by month


@dataclass(frozen=True)
class SavingsPlans:
    """The Savings Plans a plan buys, what they cover, and their idle months after the horizon."""
    bought: tuple[SavingsPlanBought, ...] = ()
    cover: tuple[SavingsPlanCover, ...] = ()
    idle_after: tuple[SavingsPlanIdle, ...] = ()


@dataclass(frozen=True)
class BindingConstraint:
    """A site or cloud limit that is tight in the plan (power, racks, max_gpus, quota, cloud_share):
    one per series of rows (a quota's months are one). plan.json writes it as one line of text,
    `text`; from_dict reads that line back into these fields (`read`)."""
    family: str                   # the row's family: power, rack_power, racks, max_gpus, quota, cloud_share
    series: str                   # its name without a month: quota[aws-use1/H100], cloud_share
    path: str = ""                # the spec path it comes from: $.sites[0].quotas.H100
    meaning: str = ""             # what it says, in the spec's terms

    @property
    def name(self) -> str:
        """The series and where the spec sets it: 'quota[aws-use1/H100] at $.sites[0].quotas.H100'."""
        return f"{self.series} at {self.path}" if self.path else self.series

    @property
    def text(self) -> str:
        """plan.json's line: '<series> at <path>: <meaning>'."""
        return f"{self.name}: {self.meaning}" if self.meaning else self.name

    @classmethod
    def read(cls, text: str) -> "BindingConstraint":
        """plan.json's line back into its fields; read(text).text == text for every line (one
        that `text` would not write as it is, is kept whole as its series)."""
        head, _, meaning = text.partition(": ")
        series, _, path = head.partition(" at ")
        typed = cls(series.partition("[")[0], series, path, meaning)
        return typed if typed.text == text else cls(text.partition("[")[0], text)


@dataclass(frozen=True)
class BreakEven:
    """Owning one GPU (owned: power only; bought: capex, power, support) against renting the same
    GPU type in the cloud, for a GPU type some workload could run on both
    (compiler/appraise/alternatives.py has the rule)."""
    gpu: str
    on_prem_site: str
    on_prem_instance: str
    cloud_site: str
    cloud_instance: str
    cloud_pricing: str
    on_prem_capex_usd_per_gpu: float          # node capex and its fabric per GPU; 0 for owned nodes
    on_prem_opex_usd_per_gpu_month: float     # power of a GPU busy all month, + support if bought
    cloud_usd_per_gpu_month: float            # a GPU busy all month (730 h) at cloud_pricing
    breakeven_months: float | None            # months of full use after which owning is cheaper; None: never
    breakeven_utilization: float | None       # share of the horizon a GPU must be busy; None: never
    # None: a plan.json that does not say (the schema leaves them optional); no key written
    note: str | None = None
    on_prem_basis: str | None = None          # owned | purchase
    on_prem_fabric: str | None = None         # purchase: the wiring in the capex; "" for owned

    @property
    def owned(self) -> bool:
        return self.on_prem_basis == "owned"


# Why owned nodes stay idle for one workload (compiler/appraise/idle.py says how each is found)
IDLE_REASONS = ("no_workload", "not_allowed", "too_big", "availability", "dearer", "cheaper_alone")
# the terms of an owned option priced alone that IdleOwned.detail names for dearer and cheaper_alone
IDLE_TERMS = ("storage", "power", "egress")


@dataclass(frozen=True)
class IdleOwned:
    """Owned on-prem nodes the plan leaves idle in a run of months, and for one workload that could
    run then, why it runs elsewhere (compiler/appraise/idle.py)."""
    site: str
    instance: str
    owned_nodes: int
    idle_nodes: int               # the most idle in one month of the run
    first_month: int
    last_month: int
    months: str                   # first-last as plan.json writes it ('3', '3-7')
    workload: str                 # "" for no_workload
    reason: str                   # one of IDLE_REASONS
    # no_workload: 'all here' or ''; not_allowed: the rule or rejection; too_big: the sizes;
    # availability: the rule; dearer, cheaper_alone: the largest term of the owned option (IDLE_TERMS)
    detail: str
    plan_usd: float | None        # what the workload costs in the plan (None: no_workload)
    owned_option_usd: float | None   # the cheapest candidate on the owned nodes alone, with its storage
    power_usd: float = 0.0
    storage_usd: float = 0.0
    storage_tier: str = ""
    storage_tb: float = 0.0       # TB the owned option would buy (0: the site's storage holds it)
    data_tb: float = 0.0          # the workload's dataset + checkpoints, TB
    egress_usd: float = 0.0
    candidate: str = ""


@dataclass(frozen=True)
class CostLine:
    category: str                 # a CostBreakdown field: capex, cloud_compute ...
    usd: float


@dataclass(frozen=True)
class CostBreakdown:
    """USD by cost category: the plan's (plan.json's cost_breakdown_usd, every category written)
    or one site's bill (cost_by_site_usd, the categories it bills written)."""
    capex: float = 0.0            # on-prem nodes bought, straight line over their useful life
    power: float = 0.0            # on-prem power
    support: float = 0.0          # on-prem support contracts of bought nodes
    fabric: float = 0.0           # on-prem wiring of bought nodes
    cloud_compute: float = 0.0    # cloud nodes: on-demand, spot, reserved terms
    storage: float = 0.0
    egress: float = 0.0           # datasets moved away from their home

    @classmethod
    def of(cls, usd: Mapping[str, float]) -> "CostBreakdown":
        """From category -> USD (a category not named: 0); ValueError for one that is no category."""
        unknown = sorted(set(usd) - set(COST_CATEGORIES))
        if unknown:
            raise ValueError(f"no cost category {unknown[0]!r} (the categories: {', '.join(COST_CATEGORIES)})")
        return cls(**usd)

    @property
    def lines(self) -> tuple[CostLine, ...]:
        """Every category and its USD, in COST_CATEGORIES order (zeros included)."""
        return tuple(CostLine(f.name, getattr(self, f.name)) for f in fields(self))

    @property
    def total(self) -> float:
        return sum(line.usd for line in self.lines)


# The breakdown's categories, in CostBreakdown's order.
COST_CATEGORIES = tuple(f.name for f in fields(CostBreakdown))


@dataclass(frozen=True)
class SiteCost:
    """What one site bills (its pools, its storage, the egress of data leaving it)."""
    site: str
    costs: CostBreakdown


@dataclass(frozen=True)
class Plan:
    spec_name: str
    spec_sha256: str
    catalog_version: str
    horizon_months: int
    solver: SolverInfo
    total_cost_usd: float
    cost_breakdown_usd: CostBreakdown
    sites: tuple[SitePlan, ...]
    pools: tuple[Pool, ...]
    workloads: tuple[WorkloadPlan, ...]
    storage: tuple[StoragePlan, ...] = ()
    binding_constraints: tuple[BindingConstraint, ...] = ()
    monthly_cost_usd: tuple[float, ...] = ()
    # What each site bills (its pools, storage, and the egress of data leaving it), by site name;
    # the sites add up to total_cost_usd. Empty in a plan that does not say.
    cost_by_site_usd: tuple[SiteCost, ...] = ()
    breakeven: tuple[BreakEven, ...] = ()
    # owned on-prem nodes the plan leaves idle and why (compiler/appraise/idle.py)
    idle_owned: tuple[IdleOwned, ...] = ()
    operability: OperabilityPlan | None = None
    after_horizon: AfterHorizon = AfterHorizon()
    start: str | None = None      # the spec's `start`: month 0 as YYYY-MM (None: undated)
    # The oldest as_of of the prices the spec's sites could be planned with, and their digest
    # (compiler/catalog/freshness.py): "" in a plan that does not say.
    prices_as_of: str = ""
    prices_sha256: str = ""
    held: tuple[Held, ...] = ()   # commitments already bought (sunk, not in total_cost_usd)
    owned_ages: tuple[OwnedAge, ...] = ()   # owned nodes with a purchase date (OwnedAge)
    savings_plans: SavingsPlans = SavingsPlans()   # Savings Plans bought (docs/savings-plans.md)
    capacity_blocks: tuple[CapacityBlock, ...] = ()   # Capacity Blocks bought (docs/capacity-blocks.md)

    @property
    def sunk_usd(self) -> float:
        """What the commitments already bought cost in the horizon and after it: not the plan's
        to decide, so not in its total."""
        return sum(h.sunk_usd for h in self.held)

    @property
    def calendar(self) -> "Calendar":
        """How this plan's months are named for people (Calendar)."""
        return Calendar(self.start)


# A calendar month as the spec's `start` writes it (the JSON Schemas and Terraform's plan_start
# check the same pattern).
MONTH_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"


def month_number(text: str) -> int:
    """'YYYY-MM' as months since January of year 0: '2027-01' -> 24324. The text must match
    MONTH_PATTERN (the spec's validation checks it first)."""
    if not re.match(MONTH_PATTERN, text):
        raise ValueError(f"not a month as YYYY-MM: {text!r}")
    return int(text[:4]) * 12 + int(text[5:7]) - 1


@dataclass(frozen=True)
class Calendar:
    """How a month of the horizon is named for people: the one rule every output uses.

    The plan counts months from 0 (plan.json's indices, the month files' numbers: machines read
    those). Without a start (the spec's `start`) a month is named by that index ('3', ranges
    '3-7', in running text 'month 3'); with one, month m is the calendar month m months after
    it ('2027-04', ranges '2027-04..2027-08', in running text '2027-04')."""
    start: str | None = None      # month 0 as YYYY-MM; None: the plan names no calendar month

    @property
    def dated(self) -> bool:
        return self.start is not None

    def name(self, m: int) -> str:
        """Month m: '3', or '2027-04' counted from the start."""
        if self.start is None:
            return str(m)
        n = month_number(self.start) + m
        return f"{n // 12:04d}-{n % 12 + 1:02d}"

    def index(self, name: str) -> int:
        """The month of the horizon a calendar month is (negative before the start), or an index
        as name() writes it undated."""
        if self.start is None:
            return int(name)
        return month_number(name) - month_number(self.start)

    def span(self, first: int, last: int) -> str:
        """Months first..last as tables write them: '3' or '3-7'; dated '2027-04..2027-08'."""
        if first == last:
            return self.name(first)
        return f"{self.name(first)}{'..' if self.dated else '-'}{self.name(last)}"

    def runs(self, months, sep: str = ", ") -> str:
        """Months as runs, each as span writes it: [0, 1, 3, 12, 13] -> '0-1, 3, 12-13'."""
        runs: list[list[int]] = []
        for m in months:
            if runs and runs[-1][1] == m - 1:
                runs[-1][1] = m
            else:
                runs.append([m, m])
        return sep.join(self.span(a, b) for a, b in runs)

    def month(self, m: int) -> str:
        """Month m in running text: 'month 3', or '2027-04'."""
        return self.name(m) if self.dated else f"month {m}"

    def months(self, first: int, last: int) -> str:
        """Months first..last in running text: 'month 3', 'months 3-7', or '2027-04..2027-08'."""
        if self.dated or first == last:
            return self.month(first) if first == last else self.span(first, last)
        return f"months {self.span(first, last)}"

    def period(self, horizon: int) -> str:
        """The horizon's months first to last: '0-35', or '2027-01..2029-12'."""
        return self.span(0, horizon - 1)


UNDATED = Calendar()


def month_range(first: int, last: int) -> str:
    """Months first..last as report and diff write them undated: '3' or '3-7' (Calendar.span)."""
    return UNDATED.span(first, last)


def months_text(months, sep: str = ", ") -> str:
    """Months as runs, undated: [0, 1, 3, 12, 13] -> '0-1, 3, 12-13' (Calendar.runs)."""
    return UNDATED.runs(months, sep)


def add_into(total: list, series) -> None:
    """Add `series` into `total` month by month, first padding `total` with zeros to its length."""
    total.extend([0] * (len(series) - len(total)))
    for m, x in enumerate(series):
        total[m] += x


def site_replicas(w: WorkloadPlan, monthly: bool = True) -> dict[str, list[int]]:
    """A workload's replicas per site, month by month, summed over its placements there (each
    site's list as long as its placements' longest monthly_replicas); monthly=False: each
    placement's peak (`replicas`) as one value."""
    out: dict[str, list[int]] = {}
    for p in w.placements:
        add_into(out.setdefault(p.site, []), p.monthly_replicas if monthly else (p.replicas,))
    return out


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if abs(value) < 1e6 else round(value, 2)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def with_deadlines(plan: Plan, deadlines: dict[str, float | None],
                   recurring: dict[str, tuple[str, int]] | None = None) -> Plan:
    """The plan with each training workload's deadline (workload name -> days) recorded, and a
    recurring job's period and run count (name -> ("7d", runs)), so the report, the launchers and
    plan.json can state them without the spec."""
    recurring = recurring or {}

    def stated(w: WorkloadPlan) -> WorkloadPlan:
        every, runs = recurring.get(w.name, (None, 0))
        return replace(w, deadline_days=deadlines.get(w.name), every=every, runs=runs)
    return replace(plan, workloads=tuple(stated(w) if w.kind == "training" else w for w in plan.workloads))


def to_dict(plan: Plan) -> dict[str, Any]:
    """The plan.json document (DESIGN.md section 5)."""
    d = asdict(plan)
    if d["operability"] is None:
        del d["operability"]      # a spec without operability limits: no key
    if d["start"] is None:
        del d["start"]            # a spec without a start: no key
    if not d["held"]:
        del d["held"]             # no commitments already bought: no key
    if not d["owned_ages"]:
        del d["owned_ages"]       # no owned nodes dated: no key
    if not plan.savings_plans.bought:
        del d["savings_plans"]    # no Savings Plan bought: no key (a plan.json without it bought none)
    if not plan.capacity_blocks:
        del d["capacity_blocks"]  # no Capacity Block bought: no key (a plan.json without it bought none)
    if not d["solver"]["moves_usd"]:
        del d["solver"]["moves_usd"]   # not a re-plan, or one that moves nothing: no key
    d["cost_breakdown_usd"] = _cost_json(plan.cost_breakdown_usd, every=True)
    # a site writes the categories it bills
    d["cost_by_site_usd"] = {s.site: _cost_json(s.costs, every=False) for s in plan.cost_by_site_usd}
    for w, typed in zip(d["workloads"], plan.workloads):
        w["estimate"] = _estimate_json(typed.estimate)
        for p in w["placements"]:
            if p["disaggregation"] is None:
                del p["disaggregation"]   # colocated replicas: no key
        if typed.inputs is None:
            del w["inputs"]           # a plan made without its spec's workloads (fixtures): no key
        else:
            w["inputs"] = typed.inputs.document
        if w["every"] is None:
            del w["every"], w["runs"]   # not a recurring job: no keys
    d["binding_constraints"] = [b.text for b in plan.binding_constraints]
    for b in d["breakeven"]:
        for k in ("note", "on_prem_basis", "on_prem_fabric"):
            if b[k] is None:
                del b[k]          # a plan.json that did not say: no key
    if not d["after_horizon"]["credits"]:
        del d["after_horizon"]["credits"]    # not `continues`, or no service in the last month: no key
    d["after_horizon"].update(committed_usd=plan.after_horizon.committed_usd,
                              charged_usd=plan.after_horizon.charged_usd)
    out = {
        "schema_version": SCHEMA_VERSION,
        "spec": {"name": d.pop("spec_name"), "sha256": d.pop("spec_sha256")},
        "catalog": {"version": d.pop("catalog_version"),
                    **{k: v for k in ("prices_as_of", "prices_sha256") if (v := d.pop(k))}},
        **d,
    }
    return _round(out)


def _cost_json(costs: CostBreakdown, every: bool) -> dict[str, float]:
    """category -> USD: every category, or (every=False) those that are not 0."""
    return {line.category: line.usd for line in costs.lines if every or line.usd}


def _estimate_json(e: EstimateFigures) -> dict[str, Any]:
    """The figures the estimate states (None: no key; no notes: no key)."""
    out: dict[str, Any] = {f.name: getattr(e, f.name) for f in fields(e)
                           if getattr(e, f.name) is not None and f.name not in ("step_breakdown", "notes")}
    if e.step_breakdown is not None:
        out["step_breakdown"] = {s.term: s.share for s in e.step_breakdown.shares}
    if e.notes:
        out["notes"] = list(e.notes)
    return out


def to_json(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def from_dict(d: dict[str, Any]) -> Plan:
    """Rebuild a Plan from a plan.json document of this SCHEMA_VERSION (what to_dict writes; an
    older file goes through compiler/plan_reader.upgrade first). Keys the writer leaves out where
    they say nothing (start, held, operability, a workload's inputs ...) may be absent."""
    return Plan(
        spec_name=d["spec"]["name"],
        spec_sha256=d["spec"]["sha256"],
        catalog_version=d["catalog"]["version"],
        prices_as_of=d["catalog"].get("prices_as_of", ""),
        prices_sha256=d["catalog"].get("prices_sha256", ""),
        horizon_months=d["horizon_months"],
        solver=_solver(d["solver"]),
        total_cost_usd=d["total_cost_usd"],
        cost_breakdown_usd=CostBreakdown.of(d["cost_breakdown_usd"]),
        sites=tuple(SitePlan(**{**s, "orchestrators": tuple(s["orchestrators"])}) for s in d["sites"]),
        pools=tuple(Pool(**{**p, "monthly_nodes": tuple(p["monthly_nodes"]),
                            "monthly_utilization": tuple(p["monthly_utilization"]),
                            "monthly_node_hours": tuple(p["monthly_node_hours"]),
                            "reservations": tuple(Reservation(**r) for r in p["reservations"])})
                    for p in d["pools"]),
        workloads=tuple(
            WorkloadPlan(**{**w, "layout": LayoutPlan(**w["layout"]),
                            "placements": tuple(_placement(p) for p in w["placements"]),
                            "estimate": _estimate(w["estimate"]),
                            "inputs": SpecInputs.of(w["inputs"]) if w.get("inputs") is not None else None,
                            "alternatives": tuple(_alternative(a) for a in w["alternatives"]),
                            "chosen_alone": (_alternative(w["chosen_alone"]) if w.get("chosen_alone")
                                             else None)})
            for w in d["workloads"]),
        storage=tuple(StoragePlan(**{**s, "monthly_tb": tuple(s["monthly_tb"])}) for s in d["storage"]),
        binding_constraints=tuple(BindingConstraint.read(b) for b in d["binding_constraints"]),
        monthly_cost_usd=tuple(d["monthly_cost_usd"]),
        cost_by_site_usd=tuple(SiteCost(s, CostBreakdown.of(c)) for s, c in d.get("cost_by_site_usd", {}).items()),
        breakeven=tuple(BreakEven(**b) for b in d["breakeven"]),
        idle_owned=tuple(IdleOwned(**r) for r in d["idle_owned"]),
        operability=_operability(d.get("operability")),
        after_horizon=_after_horizon(d["after_horizon"]),
        start=d.get("start"),
        held=tuple(Held(**{**h, "monthly_used": tuple(h["monthly_used"])}) for h in d.get("held", ())),
        owned_ages=tuple(OwnedAge(**o) for o in d.get("owned_ages", ())),
        savings_plans=_savings_plans(d.get("savings_plans")),
        capacity_blocks=tuple(CapacityBlock(**{**b, "monthly_node_hours": tuple(b["monthly_node_hours"])})
                              for b in d.get("capacity_blocks", ())),
    )


def _savings_plans(d: dict[str, Any] | None) -> SavingsPlans:
    if d is None:
        return SavingsPlans()
    return SavingsPlans(
        tuple(SavingsPlanBought(**{**b, "sites": tuple(b["sites"])}) for b in d["bought"]),
        tuple(SavingsPlanCover(**{**c, "monthly_node_hours": tuple(c["monthly_node_hours"]),
                                  "monthly_level_node_hours": tuple(c["monthly_level_node_hours"])})
              for c in d["cover"]),
        tuple(SavingsPlanIdle(**i) for i in d["idle_after"]))


def _estimate(d: dict[str, Any]) -> EstimateFigures:
    shares = d.get("step_breakdown")
    return EstimateFigures(**{**d, "step_breakdown": StepBreakdown(**shares) if shares is not None else None,
                              "notes": tuple(d.get("notes", ()))})


def _solver(d: dict[str, Any]) -> SolverInfo:
    path = d["strategy"]
    return SolverInfo(**{**d, "strategy": SolvePath(path["path"], tuple(path["steps"]), path["why"])})


def _after_horizon(d: dict[str, Any]) -> AfterHorizon:
    return AfterHorizon(d["rule"], tuple(Commitment(**c) for c in d["commitments"]),
                        tuple(TailCredit(**c) for c in d.get("credits", ())))


def _operability(d: dict[str, Any] | None) -> OperabilityPlan | None:
    if d is None:
        return None
    free = d.get("unlimited")
    return OperabilityPlan(**{**d, "unlimited": UnlimitedPlan(**free) if free else None,
                              "alone": tuple(LimitAlone(**a) for a in d["alone"])})


def _placement(p: dict[str, Any]) -> Placement:
    pd = p.get("disaggregation")
    return Placement(**{**p, "layout": LayoutPlan(**p["layout"]),
                        "disaggregation": DisaggregationPlan(**pd) if pd is not None else None, "holdings": tuple(
        Holding(h["pricing"], tuple(h["monthly_nodes"]), tuple(h["monthly_node_hours"]))
        for h in p["holdings"]), "monthly_replicas": tuple(p["monthly_replicas"])})


def _alternative(a: dict[str, Any]) -> Alternative:
    return Alternative(**{**a, "parts": tuple(OptionPart(**p) for p in a["parts"])})
