"""The Spec: the validated, typed, frozen form of a spec file.

Built by `compiler.validate` from a Document once the JSON Schema and the semantic
checks pass. Units are normalised, defaults filled; the raw dict never travels past
validation. Every workload and site remembers its JSON path so later stages
(formulate, explain) can trace a constraint back to the spec text.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace
from typing import Literal, Mapping

Pricing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]
PRICING_OPTIONS: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y")
Precision = Literal["fp32", "bf16", "fp8", "fp4"]
Quantization = Literal["bf16", "fp8", "fp4", "int8", "int4"]
Orchestrator = Literal["slurm", "kubernetes"]
HOURS_PER_MONTH = 730.0  # 8760 h / 12: the convention cloud price sheets use
RACK_UNITS = 42.0        # rack units in a rack


@dataclass(frozen=True)
class InlineModel:
    """A model defined in the spec rather than taken from the catalog."""

    name: str
    arch: Literal["dense", "moe"]
    params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    ffn_hidden: int
    active_params_b: float | None = None  # MoE: parameters used per token
    experts: int | None = None
    experts_per_token: int | None = None


@dataclass(frozen=True)
class HeldReservation:
    """A commitment already bought at a cloud site (a reservation, savings plan or committed
    use), in nodes of an instance: paid until it ends whatever the plan does, so its cost is sunk
    and its nodes are free to the plan in the months it covers."""
    instance: str
    nodes: int
    until_month: int        # the first month of the horizon it no longer covers
    term: str = "reserved_1y"
    until: str = ""         # as the spec writes it (YYYY-MM)
    path: str = ""

    @property
    def start_month(self) -> int:
        """The month its term began: before the horizon (negative), as the term's length says."""
        return self.until_month - TERM_MONTHS[self.term]


# Months a reserved term runs.
TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}


@dataclass(frozen=True)
class CloudSite:
    name: str
    provider: Literal["aws", "gcp", "azure"]
    region: str
    pricing: tuple[str, ...] = ("on_demand",)
    quotas: Mapping[str, int] = field(default_factory=dict)  # GPU type -> GPUs at once
    path: str = ""
    type: Literal["cloud"] = "cloud"
    # commitments already bought that still cover a month of the horizon
    reserved: tuple[HeldReservation, ...] = ()

    def held(self, instance: str) -> tuple[HeldReservation, ...]:
        """The site's held commitments of `instance`."""
        return tuple(r for r in self.reserved if r.instance == instance)


@dataclass(frozen=True)
class OwnedNodes:
    instance: str  # an on-prem node model from the catalog
    nodes: int
    bought: str | None = None     # YYYY-MM, where stated: its useful life runs from then
    # the month of the horizon its useful life ends (bought + the node model's useful_life_years):
    # it serves the months before; None where that is after the horizon or `bought` is not stated
    retires: int | None = None


@dataclass(frozen=True)
class EdgeOf:
    """An on-prem site that is one location of an edge site (`type: edge`, compiler/edge.py): it
    holds only the edge site's box model, and serves only that location's demand."""
    site: str               # the edge site's name in the spec
    location: str           # the location's name in the spec
    box: str                # the catalog's edge box model it may hold
    max_boxes: int | None = None   # the location's limit as the spec states it (max_gpus in boxes)
    power_stated: bool = False     # power_kw stated (else derived from max_boxes, never the binding limit)


@dataclass(frozen=True)
class OnPremSite:
    name: str
    power_kw: float
    electricity_usd_per_kwh: float
    pue: float
    max_racks: int
    rack_power_kw: float | None = None
    max_gpus: int | None = None
    owned: tuple[OwnedNodes, ...] = ()
    # TB of shared file system the site already has for datasets and checkpoints: no capex and
    # no monthly charge in the plan (its power and support are paid whatever the plan does);
    # storage beyond it is bought in a catalog tier.
    existing_storage_tb: float = 0.0
    path: str = ""
    type: Literal["on_prem"] = "on_prem"
    edge: EdgeOf | None = None     # set where the site is one location of an edge site

    def offers(self, node) -> bool:
        """Whether the site may hold the catalog node model `node`: an edge location its edge
        site's box only; a data-centre site any model but an edge box."""
        return node.name == self.edge.box if self.edge is not None else not getattr(node, "edge", False)

    def owned_nodes(self, instance: str, month: int | None = None) -> int:
        """Nodes of `instance` the site already owns in `month` (the spec may list a model more
        than once; nodes past their useful life are retired). Without a month: the most it owns
        in any month, what takes racks and bounds a pool."""
        return sum(o.nodes for o in self.owned if o.instance == instance
                   and (o.retires is None or (o.retires > 0 if month is None else month < o.retires)))

    def nodes_admitted(self, node_kw: float, node_rack_units: int, node_gpus: int) -> tuple[int, int]:
        """(new nodes of one model the power budget admits, nodes of it the racks, rack power and
        max_gpus admit in all): the most a site could ever hold of that model."""
        new = math.floor(self.power_kw / (node_kw * self.pue) + 1e-9)
        total = math.floor(self.max_racks * RACK_UNITS / node_rack_units + 1e-9)
        if self.rack_power_kw:
            total = min(total, math.floor(self.max_racks * self.rack_power_kw / node_kw + 1e-9))
        if self.max_gpus is not None:
            total = min(total, self.max_gpus // node_gpus)
        return new, total


Site = CloudSite | OnPremSite


# The policy's operability limits (docs/spec-reference.md, "Operability limits"), in the order the
# report and plan.json list them.
LIMIT_KEYS = ("max_sites_per_service", "max_gpu_types_per_service", "max_instance_types_per_site",
              "min_pool_months", "min_months_per_mix", "max_spot_share")


@dataclass(frozen=True)
class Policy:
    placement: Literal["cloud", "on_prem", "hybrid"] = "hybrid"
    allowed_gpus: tuple[str, ...] | None = None
    max_cloud_share: float | None = None
    # Operability limits (docs/spec-reference.md, "Operability limits"); None: no limit.
    max_instance_types_per_site: int | None = None   # instance types one service runs at one site
    min_months_per_mix: int | None = None            # months a service keeps one replica mix
    max_spot_share: float | None = None              # share of a training job run on spot
    # On by default (a fleet a team would run); the spec lifts each with null.
    max_sites_per_service: int | None = 3            # sites one service runs replicas at
    max_gpu_types_per_service: int | None = 2        # GPU types one service runs replicas on
    min_pool_months: int | None = 3                  # months a cloud pool carries replicas once up
    # How a commitment that outlives the horizon is priced (docs/optimizer.md, "Commitments that
    # outlive the horizon"): continues (its later months free where the last month's forecast
    # load keeps them busy; the default: a term is paid in full, and what the platform goes on
    # using after the horizon is worth its price), prorated (its months inside the horizon), full.
    after_horizon: Literal["prorated", "full", "continues"] = "continues"
    # a re-plan (--baseline) moves a running workload only where that saves at least this much
    # over the horizon (policy.replan.min_saving_usd; docs/spec-reference.md says why the default)
    replan_min_saving_usd: float = 2000.0
    # ... and at least this share of the workload's own cost in the baseline, where that is more
    replan_min_saving_share: float = 0.1

    @property
    def limits_types(self) -> bool:
        return self.max_instance_types_per_site is not None

    @property
    def limits_sites(self) -> bool:
        return self.max_sites_per_service is not None

    @property
    def limits_gpu_types(self) -> bool:
        return self.max_gpu_types_per_service is not None

    @property
    def limits_pool_life(self) -> bool:
        """A pool-life limit that can bind (one month is what every pool has anyway)."""
        return self.min_pool_months is not None and self.min_pool_months > 1

    @property
    def limits_churn(self) -> bool:
        """A mix-hold limit that can bind (one month is what every plan has anyway)."""
        return self.min_months_per_mix is not None and self.min_months_per_mix > 1

    @property
    def caps_spot(self) -> bool:
        """A spot cap that can bind: a job runs all on spot or none (one candidate), so any
        share below 1 rules spot out."""
        return self.max_spot_share is not None and self.max_spot_share < 1.0

    @property
    def sets_limits(self) -> bool:
        """Any operability limit set, whether or not it can bind (the plan records them all)."""
        return any(getattr(self, k) is not None for k in LIMIT_KEYS)

    @property
    def has_limits(self) -> bool:
        """An operability limit that can bind: the model has rows or filters for it."""
        return (self.limits_types or self.limits_churn or self.caps_spot or self.limits_sites
                or self.limits_gpu_types or self.limits_pool_life)

    def without_limits(self) -> "Policy":
        """The same policy with every operability limit lifted."""
        return replace(self, **{k: None for k in LIMIT_KEYS})

    @property
    def caps_cloud_share(self) -> bool:
        """A cloud-share cap that can bind (a share of 1 or more never does)."""
        return self.max_cloud_share is not None and self.max_cloud_share < 1.0


@dataclass(frozen=True)
class Pin:
    """Any subset of a workload's choice, fixed by the user."""

    gpu: str | None = None
    gpus: int | None = None
    site: str | None = None
    pricing: str | None = None
    instance: str | None = None


@dataclass(frozen=True)
class Data:
    dataset_tb: float = 0.0
    home: str | None = None  # site name where the data lives


@dataclass(frozen=True)
class Checkpoint:
    interval_min: float | None = None  # None: auto, chosen by the estimate from the job's size
    keep: int = 3


@dataclass(frozen=True)
class TrainingWindow:
    start_month: int = 0
    deadline_days: float | None = None  # None: may run until the end of the horizon (recurring: the period)
    every: str | None = None            # recurring: "7d" | "1mo" ... (compiler/recurrence.py); each
                                        # run's window is deadline_days from its start


@dataclass(frozen=True)
class InferenceWindow:
    start_month: int = 0  # runs from start_month to the end of the horizon


@dataclass(frozen=True)
class Traffic:
    peak_rps: float
    input_tokens: int
    output_tokens: int
    growth_per_month: float = 0.0
    # share of prompt tokens a prefix cache serves; None where the spec states none (no cache), so
    # plan.json records the traffic as written
    prefix_cache_hit: float | None = None


@dataclass(frozen=True)
class ImageTraffic:
    """A vision service's traffic: `peak_rps` images per second at peak (a request is one image),
    growing by `growth_per_month`."""
    peak_rps: float
    growth_per_month: float = 0.0

    @property
    def output_tokens(self) -> int:
        """What one request asks of a replica in the unit the replicas' capacity is stated in: the
        demand formulas (estimate/inference.demand_series, audit/rules.demand) multiply the peak by
        it. An LLM's unit is output tokens; a vision replica's capacity is in images/s, one a request."""
        return 1


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: a draft model (`draft`) or draft heads on the model (`heads`, Medusa,
    EAGLE, DeepSeek's MTP) propose `draft_tokens` tokens a step, each accepted with `acceptance`."""
    method: str
    acceptance: float
    draft_tokens: int


# slo.availability from which a service must carry its demand again without any one of its sites
# (N+1 across sites): one site's outage would break three nines on its own.
SURVIVES_SITE_LOSS = 0.999


# slo.headroom where a spec states none: the share of each latency bound a service's replicas are
# sized to leave free (docs/spec-reference.md, "Headroom"). A team's choice, not a fitted figure: a
# tenth, the Kubernetes autoscaler's own tolerance (its metric runs 10% past its target before it
# acts), so a replica at the plan's batch still meets the bound while a traffic rise waits for the
# autoscaler and a new replica's start.
DEFAULT_SLO_HEADROOM = 0.1


@dataclass(frozen=True)
class Slo:
    ttft_p99_ms: float | None       # an LLM service's bounds (None for a vision service)
    tpot_p99_ms: float | None
    availability: float = 0.99
    latency_p99_ms: float | None = None   # a vision service's: one image's latency (None for an LLM's)
    # The share of each latency bound left free: replicas are sized to the bounds x (1 - headroom).
    # A spec that states none gets DEFAULT_SLO_HEADROOM (validate.py); a Slo built in code states
    # its own, none (sized at the bounds themselves) where it does not.
    headroom: float = 0.0

    @property
    def survives_site_loss(self) -> bool:
        return self.availability >= SURVIVES_SITE_LOSS

    def sized(self, bound_ms: float | None) -> float | None:
        """The latency a replica is sized to for `bound_ms`: the bound less the headroom."""
        return None if bound_ms is None else bound_ms * (1 - self.headroom)

    @property
    def ttft_sized_ms(self) -> float | None:
        return self.sized(self.ttft_p99_ms)

    @property
    def tpot_sized_ms(self) -> float | None:
        return self.sized(self.tpot_p99_ms)

    @property
    def latency_sized_ms(self) -> float | None:
        return self.sized(self.latency_p99_ms)


@dataclass(frozen=True)
class TrainingWorkload:
    name: str
    model: str | InlineModel
    window: TrainingWindow
    # LLM: tokens (+ seq_len). Vision: samples + epochs.
    tokens: float | None = None
    seq_len: int = 4096
    samples: int | None = None
    epochs: float | None = None
    precision: str = "bf16"
    optimizer: str = "adamw"
    interruptible: bool = False
    data: Data | None = None
    checkpoint: Checkpoint = Checkpoint()
    orchestrator: str = "slurm"
    sites: tuple[str, ...] | None = None
    pin: Pin | None = None
    path: str = ""
    kind: Literal["training"] = "training"

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else self.model.name


@dataclass(frozen=True)
class InferenceWorkload:
    name: str
    model: str | InlineModel
    traffic: Traffic | ImageTraffic   # ImageTraffic: a vision model's service (images/s)
    slo: Slo
    window: InferenceWindow = InferenceWindow()
    quantization: str = "bf16"
    data: Data | None = None
    orchestrator: str = "kubernetes"
    sites: tuple[str, ...] | None = None
    pin: Pin | None = None
    path: str = ""
    kind: Literal["inference"] = "inference"
    speculative: Speculative | None = None
    # prefill and decode as separate pools (compiler/estimate/disaggregated.py): never (the default),
    # allowed (weighed beside colocated replicas, chosen where cheaper), required (only those)
    disaggregation: str | None = None   # None: not stated (never)
    # set where the service is one location's share of an edge service (compiler/edge.py)
    edge: "EdgeService | None" = None

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else self.model.name

    @property
    def vision(self) -> bool:
        """A vision model's service: images/s at a p99 latency bound (validation has checked that
        the model is a vision model exactly where the spec bounds slo.latency_p99_ms)."""
        return isinstance(self.traffic, ImageTraffic)


@dataclass(frozen=True)
class EdgeService:
    """What an edge service's per-location workload serves: the spec's service at one location of
    an edge site, with that location's traffic."""
    service: str            # the service's name in the spec
    site: str               # the edge site's name
    location: str           # the location's name


Workload = TrainingWorkload | InferenceWorkload


@dataclass(frozen=True)
class Spec:
    api_version: str
    name: str
    horizon_months: int
    sites: tuple[Site, ...]
    policy: Policy
    workloads: tuple[Workload, ...]
    sha256: str = ""   # of the spec file's bytes, for plan.json
    start: str | None = None   # month 0 as a calendar month, YYYY-MM (None: outputs count months)

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        raise KeyError(name)

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)
