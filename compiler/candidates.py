"""Candidates: the estimate stage's output and the optimizer's input.

For each workload, every feasible (site, instance, layout, size, spot, fabric) option
with what it needs (GPUs, nodes, hours per month) and what it achieves (the estimate).
Options that were considered and rejected are kept with the reason, so a reviewer
(and the infeasibility explainer) can see why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from compiler.catalog.model import Catalog
from compiler.spec import Spec


@dataclass(frozen=True, order=True)
class Layout:
    tp: int = 1   # tensor parallel, within a node
    pp: int = 1   # pipeline parallel
    dp: int = 1   # data parallel
    ep: int = 1   # expert parallel (MoE)
    cp: int = 1   # context/sequence parallel
    zero: int = 0  # ZeRO/FSDP stage (0: none)
    recompute: str = "selective"   # activation recompute: selective (attention core) | moe (and the MoE
                                   # layers) | full (every layer)


@dataclass(frozen=True)
class TrainingEstimate:
    memory_gb_per_gpu: float
    duration_hours: float         # wall clock on this candidate, overheads included
    mfu: float                    # model FLOPs utilization achieved
    tokens_per_s: float | None = None   # LLM
    samples_per_s: float | None = None  # vision
    notes: tuple[str, ...] = ()   # e.g. "communication dominates beyond 512 GPUs"
    # Where the run's wall time goes: (term, share of duration_hours), shares summing to 1
    # (docs/performance-model.md, "Step-time breakdown").
    step_breakdown: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Disaggregation:
    """A disaggregated replica unit (compiler/estimate/disaggregated.py): prefill_instances servers
    of prefill_tp GPUs and decode_instances servers of decode_tp GPUs, the KV cache sent between."""
    prefill_tp: int
    prefill_instances: int
    decode_tp: int
    decode_instances: int
    prefill_ms: float = 0.0       # one request's prefill
    transfer_ms: float = 0.0      # its KV cache over the fabric

    @property
    def gpus(self) -> int:
        return self.prefill_tp * self.prefill_instances + self.decode_tp * self.decode_instances


@dataclass(frozen=True)
class InferenceEstimate:
    memory_gb_per_gpu: float
    # What ONE replica sustains at the SLO, in the service's demand unit (the figure the demand rows
    # read): output tokens/s for an LLM; images/s for a vision model's service (images_per_s)
    tokens_per_s: float
    ttft_ms: float | None         # LLM (None for a vision service)
    tpot_ms: float | None
    batch: int                    # concurrent sequences per replica (vision: images a batch)
    notes: tuple[str, ...] = ()
    weights_gb: float = 0.0       # the model's weights at the quantized width (all of a replica's GPUs)
    # prefill and decode as separate pools (a replica is then one unit of both); None: colocated
    disaggregation: Disaggregation | None = None
    # a vision service's batch latency at that batch, o + B t (what slo.latency_p99_ms bounds); None: an LLM's
    latency_ms: float | None = None

    @property
    def vision(self) -> bool:
        return self.latency_ms is not None

    @property
    def images_per_s(self) -> float | None:
        """A vision replica's capacity, images/s (None for an LLM replica)."""
        return self.tokens_per_s if self.vision else None


@dataclass(frozen=True)
class Candidate:
    """One concrete, launchable way to run a workload."""

    id: str                       # stable, unique: sorts candidates deterministically
    workload: str
    kind: str                     # training | inference
    site: str
    site_type: str                # cloud | on_prem
    instance: str                 # cloud instance type or on-prem node model
    gpu: str
    gpus_per_node: int
    gpus: int                     # training: GPUs held; inference: GPUs per replica
    nodes: int                    # training: nodes held; inference: 0 (replicas pack into nodes)
    layout: Layout
    fabric: str                   # scale-out fabric the estimate assumed
    spot: bool                    # runs on spot capacity (interruptible training only)
    estimate: TrainingEstimate | InferenceEstimate
    # Training schedule: starts at start_month, runs `hours`; usage = hours run per month.
    start_month: int = 0
    usage: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class Rejection:
    workload: str
    site: str
    instance: str                 # the node model ("" where the rejection is of the workload itself)
    gpu: str
    reason: str                   # "does not fit: needs 97 GB/GPU, has 80", "misses deadline by 12 days"
    gpus: int = 0
    fabric: str = ""              # on-prem: the fabric tried with the node (a choice there)

    @property
    def label(self) -> str:
        """The node model as the user reads it: with its fabric where that is a choice (on-prem)."""
        return f"{self.instance}+{self.fabric}" if self.fabric else self.instance


@dataclass(frozen=True)
class Candidates:
    spec: Spec
    catalog: Catalog
    by_workload: Mapping[str, tuple[Candidate, ...]]
    rejected: Mapping[str, tuple[Rejection, ...]] = field(default_factory=dict)
