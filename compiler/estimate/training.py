"""LLM training speed: FLOPs per token, the step-time model and the best layout.

FLOPs per token (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, appendix B):
    6*N_active + 12*L*h*s       (forward + backward; attention scores and values).
Step time for a layout on G GPUs, global batch B tokens, m micro-batches per pipeline:
    compute  = B * flops_per_token / (G * peak * base_mfu)   (fp8: compute_s_per_token)
    pipeline = (compute + exposed TP/CP/EP/PP comm) / (1 - bubble),
               bubble = (p-1)/(v*m + p-1)
    step     = pipeline + exposed DP gradient all-reduce (ring over the fabric)
    MFU      = B * flops_per_token / (G * peak * step)
A Step keeps its terms (Step.breakdown): compute + exposed TP + CP + EP + PP + bubble + exposed
DP = step, with bubble = pipeline - critical path (the pipeline's idle share as time). The identity
is exact in real arithmetic; in floats the sum may differ from the step by an ulp of rounding.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from compiler.candidates import Layout
from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms, moe
from compiler.estimate.factors import factor, per
from compiler.estimate.models import active_expert_params, is_moe
from compiler.estimate.layout import inner_degrees, training_degrees, training_layouts
from compiler.estimate.memory import (GB, TrainingMemory, activation_bytes_per_gpu, expert_replicas, model_state_bytes,
                                      params_per_gpu, sharded_state_bytes, state_bytes_per_param, training_memory,
                                      usable_training_gb)

PEAK_KEYS = {"fp32": ("tf32", "fp32"), "bf16": ("bf16", "fp16"), "fp8": ("fp8",), "fp4": ("fp4",)}
LOW_PRECISION = ("fp8", "fp4")   # Transformer Engine recipes: linear layers low, attention bf16


def peak_flops(gpu: Gpu, precision: str) -> float | None:
    """Dense peak FLOP/s the precision runs at (fp32 uses TF32 tensor cores); None if absent."""
    for key in PEAK_KEYS.get(precision, (precision,)):
        if gpu.tflops.get(key):
            return gpu.tflops[key] * 1e12
    return None


def flops_per_token(model: Model, seq_len: int) -> float:
    """6*N_active + 12*L*h*s (MoE: active parameters only)."""
    return 6 * model.active_b * 1e9 + 12 * model.layers * model.attention_width * seq_len


def compute_s_per_token(model: Model, gpu: Gpu, seq_len: int, precision: str, catalog: Catalog) -> float | None:
    """GPU-seconds of pure compute per token (before communication and bubble), or None.

    Linear layers (6 N_active): bf16/fp32 at the precision's peak x `base_mfu.<gpu>.<prec>`; fp8 and
    fp4 (Transformer Engine) run the linear layers' GEMMs at the fp8 (fp4) peak with their own
    efficiency `fp8_mfu.<gpu>` (`fp4_mfu.<gpu>`). Attention's score and value products (the
    12 L h s of the model FLOPs) run in 16 bits (TF32 under fp32) in fused attention kernels: a
    causal kernel computes `attention_causal_share` of them (the blocks above the diagonal are
    skipped), at `attention_mfu.<gpu>` of the 16-bit peak. So attention sets the pace on long
    sequences, and fp8 gains less there."""
    if peak_flops(gpu, precision) is None:
        return None
    linear = 6 * model.active_b * 1e9
    return linear / linear_flop_rate(gpu, precision, catalog) + attention_s_per_token(model, gpu, seq_len,
                                                                                      precision, catalog)


def attention_s_per_token(model: Model, gpu: Gpu, seq_len: int, precision: str, catalog: Catalog) -> float:
    """GPU-seconds per token of attention's score and value products (compute_s_per_token's)."""
    attention = 12 * model.layers * model.attention_width * seq_len
    attn_peak = peak_flops(gpu, "fp32" if precision == "fp32" else "bf16") or peak_flops(gpu, "fp8") / 2
    return attention * factor(catalog, "attention_causal_share") / (attn_peak * per(catalog, "attention_mfu", gpu.name))


def linear_flop_rate(gpu: Gpu, precision: str, catalog: Catalog) -> float | None:
    """FLOP/s the linear layers' GEMMs reach at the dense rate (compute_s_per_token's): fp8 at the
    fp8 peak x `fp8_mfu`, other precisions at their peak x `base_mfu`."""
    if peak_flops(gpu, precision) is None:
        return None
    if precision in LOW_PRECISION:
        return peak_flops(gpu, precision) * per(catalog, f"{precision}_mfu", gpu.name)
    return peak_flops(gpu, precision) * per(catalog, "base_mfu", gpu.name, precision)


def expert_s_per_token(model: Model, gpu: Gpu, precision: str, catalog: Catalog) -> float:
    """GPU-seconds per token of the routed experts' GEMMs at the dense rate (the part of
    compute_s_per_token they are): 6 x the k experts' parameters. 0 for a dense model."""
    rate = linear_flop_rate(gpu, precision, catalog)
    return 6 * active_expert_params(model) / rate if rate else 0.0


def compute_mfu(model: Model, gpu: Gpu, seq_len: int, precision: str, catalog: Catalog) -> float | None:
    """The MFU of pure compute, against the precision's dense peak (what a step reaches with no
    communication or bubble): an upper bound on every layout's step MFU."""
    per_token = compute_s_per_token(model, gpu, seq_len, precision, catalog)
    if per_token is None:
        return None
    return flops_per_token(model, seq_len) / (peak_flops(gpu, precision) * per_token)


@dataclass(frozen=True)
class Fabric:
    """What the step model needs to know about the network a candidate runs on. `nvlink_domain`:
    the GPUs one NVLink domain joins where more than a node's (a GB200 NVL72 rack: 72 GPUs over
    18 four-GPU nodes); 0 where it is the node. Within the domain the step model's collectives run
    over NVLink, as within a node; each GPU's share of the scale-out network is its own node's."""
    name: str
    node_gbps: float
    gpus_per_node: int
    nvlink_domain: int = 0

    @property
    def domain(self) -> int:
        """GPUs that reach each other over NVLink: the rack-scale domain, or the node."""
        return max(self.nvlink_domain, self.gpus_per_node)


@dataclass(frozen=True)
class Step:
    layout: Layout
    seconds: float
    tokens: float          # tokens per step
    compute_s: float       # pure compute at base MFU
    mfu: float
    overhead_share: float  # (step - compute) / step: communication + bubble
    memory: TrainingMemory
    # The rest of the step, in seconds: compute_s plus these add up to `seconds` (to an ulp).
    exposed_tp_s: float = 0.0   # TP all-reduces left on the critical path
    exposed_cp_s: float = 0.0   # ring-attention K,V passes left on it
    exposed_ep_s: float = 0.0   # MoE all-to-alls left on it
    exposed_pp_s: float = 0.0   # stage-to-stage activations and gradients (never overlapped)
    bubble_s: float = 0.0       # pipeline idle time: pipeline - critical path
    exposed_dp_s: float = 0.0   # gradient all-reduce beyond what the backward pass hides
    moe_gemm_s: float = 0.0     # routed experts past their FLOPs at the dense rate (moe.py)
    recompute_s: float = 0.0    # full recompute: the forward pass run again in the backward

    def breakdown(self) -> dict[str, float]:
        """Seconds per step by term, in the order they add up to `seconds`."""
        return {"compute": self.compute_s, "recompute": self.recompute_s, "moe_gemm": self.moe_gemm_s,
                "exposed_tp": self.exposed_tp_s, "exposed_cp": self.exposed_cp_s, "exposed_ep": self.exposed_ep_s,
                "exposed_pp": self.exposed_pp_s, "pipeline_bubble": self.bubble_s, "exposed_dp": self.exposed_dp_s}


class LayoutSearch:
    """step_time, best_step and mfu_ceiling for one (model, GPU, fabric, sequence length, precision,
    optimizer, catalog): the estimate asks these of thousands of GPU counts and layouts.

    Exact, not approximate: what a step or its memory reads that does not depend on the layout
    (catalog factors, peaks, bandwidths, compute per token) is looked up once here, and what
    depends on the shape (tp, pp, cp, ep) alone once per shape (_Shape); the per-layout arithmetic
    is the same operations on the same floats in the same order, so every number is bit for bit
    what it was when each call worked everything out afresh. Each count's answer is kept (the
    estimate's node-count scan asks for a count again when it reports why none was found), and
    mfu_ceiling keeps each (shape, dp)'s MFU: a step is a pure function of its layout, and the
    ceiling's layouts repeat from one GPU count to the next."""

    def __init__(self, model: Model, gpu: Gpu, fabric: Fabric, seq_len: int, precision: str, optimizer: str,
                 catalog: Catalog) -> None:
        self.model, self.gpu, self.fabric, self.catalog = model, gpu, fabric, catalog
        self.seq_len, self.precision, self.optimizer = seq_len, precision, optimizer
        self.peak = peak_flops(gpu, precision)
        self.cap = usable_training_gb(gpu.memory_gb, catalog)
        self.gpn = fabric.domain     # GPUs joined by NVLink: the step model's "node"
        self.cp_min = int(factor(catalog, "context_parallel_min_seq"))
        self.z3_multiplier = factor(catalog, "zero3_comm_multiplier")
        self.buffer_gb = factor(catalog, "training_memory_buffer_gb")
        self.per_param = state_bytes_per_param(precision, optimizer, catalog)
        self.recomputes = recomputes(model)
        self.inner = inner_degrees(model, self.gpn, seq_len, self.cp_min)
        self._shapes: dict[tuple[int, int, int, int], _Shape] = {}
        self._best: dict[int, tuple[Step | None, Step | None]] = {}
        self._ceiling: dict[int, float | None] = {}
        self._ceiling_mfu: dict[tuple[int, int, int, int, int], float] = {}
        self.compute_mfu = compute_mfu(model, gpu, seq_len, precision, catalog)   # node_hours_floor reads it
        if self.peak is None:
            return
        self.mb = int(factor(catalog, "micro_batch_size"))
        self.seqs = max(1, round(factor(catalog, "global_batch_tokens") / seq_len))
        self.fpt = flops_per_token(model, seq_len)
        self.s_per_token = compute_s_per_token(model, gpu, seq_len, precision, catalog)
        self.expert_s_per_token = expert_s_per_token(model, gpu, precision, catalog)
        self.copies_s_per_token = moe.copies_s_per_token(model, gpu.memory_bandwidth_gb_s, precision, catalog)
        self.nvl = comms.scaleup_bw(gpu, catalog)
        self.net = (comms.scaleout_bw(fabric.node_gbps, fabric.gpus_per_node, fabric.name, catalog)
                    if fabric.node_gbps > 0 else self.nvl)
        self.overlap = {kind: factor(catalog, f"{kind}_overlap") for kind in ("tp", "ep", "dp")}
        self.attn_s_per_token = attention_s_per_token(model, gpu, seq_len, precision, catalog)

    def shape(self, tp: int, pp: int, cp: int, ep: int) -> _Shape:
        sh = self._shapes.get((tp, pp, cp, ep))
        if sh is None:
            sh = self._shapes[(tp, pp, cp, ep)] = _Shape(self, tp, pp, cp, ep)
        return sh

    def terms(self, sh: _Shape, tp: int, pp: int, dp: int, ep: int, cp: int, zero: int,
              recompute: str = "selective") -> tuple:
        """A layout's step: (seconds, tokens, compute, mfu, overhead share, exposed TP, CP, EP, PP,
        bubble, exposed DP, MoE GEMMs, recompute), in Step's field order. The step model in the
        module docstring. Full recompute runs every layer's forward again in the backward pass: a
        third more compute, and the forward's communication (2 of the 4 TP all-reduces and of the
        4 all-to-alls, 1 of the 3 ring passes) once more; MoE recompute does so for the MoE layers
        alone (their routed experts and all-to-alls)."""
        gpus = tp * pp * dp * cp
        mb = self.mb
        m = max(1, math.ceil(self.seqs / (dp * mb)))
        tokens = m * mb * dp * self.seq_len
        compute = tokens * self.s_per_token / gpus
        moe_s = tokens * sh.moe_s_per_token / gpus
        multi_node = gpus > self.gpn
        layers = sh.layers
        # TP: 2 all-reduces forward + 2 backward per layer per micro-batch (Megatron).
        tp_s = m * layers * 4 * sh.tp_allreduce
        # CP (ring attention): each rank's K,V chunk travels cp-1 hops, forward and twice backward;
        # each hop hides behind the attention of the block at hand (_Shape.cp_exposed_hop).
        cp_s = m * layers * 3 * (cp - 1) * sh.cp_exposed_hop if cp > 1 else 0.0
        # EP: dispatch + combine all-to-all, forward and backward, top-k copies of each token.
        ep_s = m * layers * 4 * sh.ep_all_to_all if ep > 1 else 0.0
        # PP: activations to the next stage and gradients back, per micro-batch.
        pp_s = 0.0
        if pp > 1:
            pp_bw = self.net if multi_node else self.nvl
            pp_s = m * 2 * mb * sh.s_local * self.model.hidden * ACT_BYTES / tp / pp_bw
        recompute_s = 0.0
        if recompute == "full":
            recompute_s = (compute + moe_s) / 3
            tp_s, ep_s, cp_s = tp_s * 1.5, ep_s * 1.5, cp_s * 4 / 3
        elif recompute == "moe":
            recompute_s = (tokens * self.expert_s_per_token / gpus + moe_s) / 3
            ep_s = ep_s * 1.5
        overlap = self.overlap
        exposed_tp = comms.exposed(tp_s, overlap["tp"], compute)
        exposed_cp = cp_s
        exposed_ep = comms.exposed(ep_s, overlap["ep"], compute)
        critical = compute + recompute_s + moe_s + exposed_tp + exposed_cp + exposed_ep + pp_s
        bubble = comms.pipeline_bubble(pp, m, sh.virtual_stages)
        pipeline = critical / (1 - bubble)
        # DP: gradient all-reduce (ZeRO-3: all-gather params twice + reduce-scatter grads).
        dp_bw = self.net if multi_node else self.nvl
        dp_s = (comms.ring_allreduce_s(sh.dense_grad_bytes, dp, dp_bw)
                + comms.ring_allreduce_s(sh.expert_grad_bytes, expert_replicas(tp, cp, dp, ep), dp_bw))
        if zero >= 3:
            dp_s *= self.z3_multiplier
        exposed_dp = comms.exposed(dp_s, overlap["dp"], compute * 2 / 3)
        step = pipeline + exposed_dp
        mfu = tokens * self.fpt / (gpus * self.peak * step)
        return (step, tokens, compute, mfu, (step - compute) / step,
                exposed_tp, exposed_cp, exposed_ep, pp_s, pipeline - critical, exposed_dp, moe_s, recompute_s)

    def states_gb(self, sh: _Shape, tp: int, cp: int, dp: int, ep: int, zero: int) -> float:
        """training_memory's states_gb for the layout (memory.states_per_gpu_bytes)."""
        return sharded_state_bytes(sh.dense, sh.experts, dp, expert_replicas(tp, cp, dp, ep), zero,
                                   self.per_param) / GB

    def make_step(self, degrees: tuple[int, int, int, int, int, int], terms: tuple, states_gb: float,
                  recompute: str = "selective") -> Step:
        tp, pp, dp, ep, cp, zero = degrees
        mem = TrainingMemory(states_gb, self.shape(tp, pp, cp, ep).activations[recompute], self.buffer_gb)
        return Step(Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, zero=zero, recompute=recompute),
                    terms[0], terms[1], terms[2], terms[3], terms[4], mem, *terms[5:])

    def step(self, layout: Layout, mem: TrainingMemory | None = None) -> Step | None:
        """step_time: the layout's Step, with `mem` or its training_memory."""
        if self.peak is None:
            return None
        l = layout
        terms = self.terms(self.shape(l.tp, l.pp, l.cp, l.ep), l.tp, l.pp, l.dp, l.ep, l.cp, l.zero, l.recompute)
        if mem is None:
            mem = training_memory(self.model, layout, self.seq_len, self.precision, self.optimizer, self.catalog)
        return Step(layout, terms[0], terms[1], terms[2], terms[3], terms[4], mem, *terms[5:])

    def best(self, gpus: int) -> tuple[Step | None, Step | None]:
        """best_step on `gpus`."""
        found = self._best.get(gpus)
        if found is None:
            found = self._best[gpus] = self._search_best(gpus)
        return found

    def _search_best(self, gpus: int) -> tuple[Step | None, Step | None]:
        if self.peak is None:
            return None, None
        # ZeRO 1 and 2 step alike (only stage 3 moves more: zero3_comm_multiplier), and the key
        # breaks a tie by the lower stage; so once a shape fits at one stage with selective
        # recompute its higher stages, which training_layouts yields next, can neither win nor be
        # the leanest that is reported. More recompute is tried only where less does not fit: on
        # the same layout each is slower than the one before (RECOMPUTE's order).
        z3_slower = self.z3_multiplier >= 1
        best = best_rank = leanest = fitted = None
        for degrees in training_degrees(self.model, gpus, self.inner):
            tp, pp, dp, ep, cp, zero = degrees
            shape = (tp, pp, cp, ep, dp)
            if fitted == shape and (zero < 3 or z3_slower):
                continue
            # Memory first: a layout that does not fit needs no step time (the hot loop of estimate).
            sh = self.shape(tp, pp, cp, ep)
            states_gb = self.states_gb(sh, tp, cp, dp, ep, zero)
            for recompute in self.recomputes:
                total_gb = states_gb + sh.activations[recompute] + self.buffer_gb   # TrainingMemory.total_gb
                if total_gb <= self.cap:
                    break
            if leanest is None or total_gb < leanest[0]:
                leanest = (total_gb, degrees, states_gb, recompute)
            if total_gb <= self.cap:
                fitted = shape if zero and recompute == "selective" else fitted
                terms = self.terms(sh, *degrees, recompute)
                rank = _rank(terms[0], terms[1], pp, tp, cp, ep, zero, recompute)
                if best is None or rank < best_rank:
                    best, best_rank = (degrees, terms, states_gb, recompute), rank
        if best is not None:
            return self.make_step(*best), None
        if leanest is None:
            return None, None
        _total, degrees, states_gb, recompute = leanest
        tp, pp, dp, ep, cp, zero = degrees
        return None, self.make_step(degrees, self.terms(self.shape(tp, pp, cp, ep), *degrees, recompute), states_gb,
                                    recompute)

    def ceiling(self, gpus: int) -> float | None:
        """mfu_ceiling on `gpus`."""
        if gpus not in self._ceiling:
            self._ceiling[gpus] = self._ceiling_at(gpus)
        return self._ceiling[gpus]

    def _ceiling_at(self, gpus: int) -> float | None:
        if self.peak is None or gpus <= self.gpn:
            return None
        best = 0.0
        for tp, pp, cp, ep in _shapes(self.model, self.gpn, self.seq_len, self.cp_min):
            dp = max(-(-ep // (tp * cp)), -(-gpus // (tp * pp * cp)))
            mfu = self._ceiling_mfu.get((tp, pp, cp, ep, dp))
            if mfu is None:
                mfu = self._ceiling_mfu[(tp, pp, cp, ep, dp)] = self._shape_ceiling(tp, pp, cp, ep, dp)
            best = max(best, mfu)
        return best

    def _shape_ceiling(self, tp: int, pp: int, cp: int, ep: int, dp: int) -> float:
        """The most MFU a layout of this shape may reach at data-parallel degree dp or more, over
        the (ZeRO stage, recompute) pairs that could fit memory at some such degree (0 if none).

        A layout's memory is its states + activations[recompute] + buffer (_search_best), and its
        states only shrink as dp grows: to the weights alone under ZeRO 1 and 2 (gradients and
        optimizer states sharded away; stage 1 keeps the gradients too), to nothing under ZeRO-3.
        So a pair whose activations, buffer and that limit pass the usable memory fits on no
        count; a shape that needs full recompute or ZeRO-3 everywhere is bounded by those steps,
        not by its selective, ZeRO-1 step (a 70B model on 24 GB GPUs: about a quarter lower)."""
        sh = self.shape(tp, pp, cp, ep)
        weights = (sh.dense + sh.experts) * self.per_param[0] / GB
        best = 0.0
        for recompute in self.recomputes:
            for zero, least_states in ((1, weights), (3, 0.0)):
                if least_states + sh.activations[recompute] + self.buffer_gb > self.cap:
                    continue
                terms = self.terms(sh, tp, pp, dp, ep, cp, zero if dp > 1 else 0, recompute)
                best = max(best, terms[3])
        return best


ACT_BYTES = 2  # 16-bit activations exchanged between ranks


def recomputes(model: Model) -> tuple[str, ...]:
    """The activation recomputes a layout may use, least first: MoE recompute only for MoE models."""
    return RECOMPUTE if is_moe(model) else ("selective", "full")


class _Shape:
    """What a step and its memory read that depends on (tp, pp, cp, ep) and not on dp or the
    ZeRO stage, each worked out as step_time and training_memory work it out (a GPU with a peak
    at the precision: LayoutSearch asks for none otherwise)."""

    __slots__ = ("layers", "s_local", "tp_allreduce", "kv_chunk", "cp_bw", "ep_all_to_all", "virtual_stages",
                 "dense", "experts", "dense_grad_bytes", "expert_grad_bytes", "activations", "moe_s_per_token",
                 "cp_exposed_hop")

    def __init__(self, search: LayoutSearch, tp: int, pp: int, cp: int, ep: int) -> None:
        model, catalog, seq_len, gpn = search.model, search.catalog, search.seq_len, search.gpn
        mb, nvl, net = search.mb, search.nvl, search.net
        self.dense, self.experts = params_per_gpu(model, Layout(tp=tp, pp=pp, ep=ep))
        self.activations = {r: activation_bytes_per_gpu(model, Layout(tp=tp, cp=cp, recompute=r), seq_len, mb,
                                                        search.precision, catalog) / GB for r in search.recomputes}
        self.layers = layers = model.layers / pp
        self.s_local = s_local = seq_len / cp
        self.tp_allreduce = comms.ring_allreduce_s(mb * s_local * model.hidden * ACT_BYTES, tp, nvl)
        # A rank passes on the K,V of its own heads: tensor parallelism splits the KV heads (GQA's
        # few KV heads are replicated once tp exceeds them).
        self.kv_chunk = mb * s_local * max(1.0, (model.kv_heads or model.heads) / tp) * model.kv_head_values * ACT_BYTES
        self.cp_bw = nvl if tp * cp <= gpn else net
        # Ring attention (Liu et al. 2023): a K,V hop runs while the rank computes attention against
        # the chunk it holds, a cp-th of its attention per pass; only the excess is on the critical
        # path. Per layer and micro-batch a rank's attention is attn_s_per_token x mb s / (tp cp),
        # a third of it forward and two thirds backward, over as many hops each way as passes.
        block_s = search.attn_s_per_token / model.layers * mb * seq_len / (tp * cp) / (3 * cp)
        self.cp_exposed_hop = max(0.0, self.kv_chunk / self.cp_bw - block_s)
        self.ep_all_to_all = 0.0
        if ep > 1:   # the ep ranks of a group are consecutive GPUs (folded over tp x cp x dp)
            ep_bw = nvl if ep <= gpn else net
            tok_bytes = mb * s_local / tp * model.hidden * ACT_BYTES * (model.experts_per_token or 1)
            self.ep_all_to_all = comms.all_to_all_s(tok_bytes, ep, ep_bw) * moe.imbalance(ep, catalog)
        # Expert GEMMs get m = ep * tokens * k / E rows per micro-batch (moe.py) and take slowdown
        # times their FLOPs' time, which compute counts once; each routed copy costs its bytes too.
        # Under expert parallelism each rank routes its sequence-parallel share of the micro-batch.
        routed = mb * s_local / tp if ep > 1 else mb * s_local
        self.moe_s_per_token = (search.expert_s_per_token * (moe.training_slowdown(model, ep, routed, catalog) - 1)
                                + search.copies_s_per_token * moe.imbalance(ep, catalog)
                                if search.expert_s_per_token else 0.0)
        self.virtual_stages = (min(int(factor(catalog, "pipeline_virtual_stages")), max(1, int(layers)))
                               if pp > 1 else 1)
        grad_b = search.per_param[1]
        self.dense_grad_bytes, self.expert_grad_bytes = self.dense * grad_b, self.experts * grad_b


def step_time(model: Model, layout: Layout, gpu: Gpu, fabric: Fabric, seq_len: int,
              precision: str, optimizer: str, catalog: Catalog, mem: TrainingMemory | None = None) -> Step | None:
    return LayoutSearch(model, gpu, fabric, seq_len, precision, optimizer, catalog).step(layout, mem)


def best_step(model: Model, gpus: int, gpu: Gpu, fabric: Fabric, seq_len: int, precision: str,
              optimizer: str, catalog: Catalog) -> tuple[Step | None, Step | None]:
    """(fastest layout that fits memory, None), or (None, smallest-memory layout) when none fits:
    the second explains the 'does not fit' rejection."""
    return LayoutSearch(model, gpu, fabric, seq_len, precision, optimizer, catalog).best(gpus)


@functools.lru_cache(maxsize=512)
def _shapes(model: Model, gpn: int, seq_len: int, cp_min: int) -> tuple[tuple[int, int, int, int], ...]:
    """Every (tp, pp, cp, ep) training_layouts offers on some GPU count: its inner degrees are
    powers of two, so a count of 2^16 nodes admits them all. Kept per model and node size (a
    bounded cache: a long-lived process compiling many specs does not grow without end)."""
    return tuple(sorted({(l.tp, l.pp, l.cp, l.ep)
                         for l in training_layouts(model, gpn * 2 ** 16, gpn, seq_len, cp_min)}))


def mfu_ceiling(model: Model, gpus: int, gpu: Gpu, fabric: Fabric, seq_len: int, precision: str,
                optimizer: str, catalog: Catalog) -> float | None:
    """An upper bound on the MFU of every layout on `gpus` or more GPUs (gpus > one node).

    For a fixed shape (tp, pp, cp, ep) step_time's terms scale with the micro-batches m, except
    the pipeline bubble, which grows as m = ceil(seqs / (dp * mb)) falls, and the DP all-reduce,
    whose ring time grows with dp while the compute it may hide behind shrinks. So a shape's MFU,
    at a given ZeRO stage and recompute, never rises with dp, and the best MFU on G >= gpus is at
    most the best over every shape at the smallest dp that reaches `gpus`, over the stages and
    recomputes that could fit memory at some larger dp (LayoutSearch._shape_ceiling). The tests
    in tests/test_estimate_training.py check this against best_step, memory-bound GPUs included."""
    return LayoutSearch(model, gpu, fabric, seq_len, precision, optimizer, catalog).ceiling(gpus)


def fewest_gpus_to_fit(model: Model, gpn: int, gpu: Gpu, seq_len: int, precision: str, optimizer: str,
                       catalog: Catalog) -> float:
    """A count of GPUs below which no layout fits memory (inf: none fits on any count).

    On G GPUs every layout needs at least activations(tp, cp) + buffer + states / G GB per GPU:
    activations depend on tp and cp alone (memory.activation_bytes_per_gpu), and the whole
    model's training states shard over at most tp * pp * dp <= G ranks, even under ZeRO-3. So
    G < states / (usable - activations - buffer) for every shape means best_step finds nothing:
    on one-GPU nodes, where tp = 1 keeps a large model's activations whole, that skips nearly all
    of the counts the estimate used to try (the 100-workload benchmark: 1.48M of 1.58M)."""
    if peak_flops(gpu, precision) is None:
        return 0.0   # best_step says why at once, on the first count
    cap = usable_training_gb(gpu.memory_gb, catalog)
    states = model_state_bytes(model.params_b * 1e9, precision, optimizer, catalog) / GB
    mb = int(factor(catalog, "micro_batch_size"))
    buffer = factor(catalog, "training_memory_buffer_gb")
    cp_min = int(factor(catalog, "context_parallel_min_seq"))
    fewest = math.inf
    for tp, cp in sorted({(tp, cp) for tp, _pp, cp, _ep in _shapes(model, gpn, seq_len, cp_min)}):
        act = min(activation_bytes_per_gpu(model, Layout(tp=tp, cp=cp, recompute=r), seq_len, mb, precision, catalog)
                  for r in recomputes(model)) / GB
        room = cap - act - buffer
        if room > 0:
            fewest = min(fewest, states / room)
    return fewest


def _key(s: Step) -> tuple:
    l = s.layout
    return _rank(s.seconds, s.tokens, l.pp, l.tp, l.cp, l.ep, l.zero, l.recompute)


RECOMPUTE = ("selective", "moe", "full")   # least recompute (fastest) first


def _rank(seconds: float, tokens: float, pp: int, tp: int, cp: int, ep: int, zero: int,
          recompute: str = "selective") -> tuple:
    # Fastest per token, not per step: layouts round the global batch to whole micro-batches
    # differently, so their steps carry different token counts (and the run's duration is
    # tokens / s.tokens * s.seconds). Rounded to 12 significant digits so ties stay ties.
    return (float(f"{seconds / tokens:.12g}"), pp, tp, cp, ep, zero, RECOMPUTE.index(recompute))


def restart_h(state_gb_total: float, nodes: int, catalog: Catalog) -> float:
    """Hours from an interruption to training again: detect, reschedule and initialise
    (`restart_minutes`, fixed), then reload the checkpoint, which every node reads its shard of in
    parallel, so the reload shrinks as the job grows."""
    reload_s = state_gb_total / (max(1, nodes) * factor(catalog, "checkpoint_read_gb_s_per_node"))
    return factor(catalog, "restart_minutes") / 60 + reload_s / 3600


def interruption_loss_per_gpu_hour(interval_min: float | None, catalog: Catalog) -> float:
    """A lower bound on the share of a run lost to hardware interruptions, per GPU: each loses the
    fixed part of a restart, plus half a stated checkpoint interval (an auto interval and the
    reload are left out; both are >= 0). lost_fraction is never below gpus times this."""
    per_event_h = factor(catalog, "restart_minutes") / 60 + (interval_min or 0.0) / 60 / 2
    return factor(catalog, "hardware_interruptions_per_gpu_day") / 24 * per_event_h


@dataclass(frozen=True)
class Losses:
    """What interruptions and checkpoints cost a run, as a fraction of its ideal time."""
    fraction: float
    interval_min: float       # the checkpoint interval used (the stated one, or auto's choice)
    auto: bool
    notes: tuple[str, ...]


def lost_fraction(gpus: int, nodes: int, interval_min: float | None, spot_rate_node_day: float,
                  state_gb_total: float, catalog: Catalog) -> Losses:
    """Overheads added to the ideal run time, as a fraction of it (additive, first order).

    Interruptions arrive at rate r per hour: hardware (`hardware_interruptions_per_gpu_day` per
    GPU, Llama 3's 466 in 54 days on 16,384 GPUs) plus spot preemptions (per node). Each redoes
    half a checkpoint interval I of work and restarts (restart_h). Each checkpoint stalls the job
    for the synchronous part S of its write (the model state over every node's write rate,
    times 1 - `checkpoint_async_fraction`). So lost = r (I/2 + R) + S / I.
    With no stated interval I is auto: Young's optimum sqrt(2 S / r), which minimises r I/2 + S/I
    (Young 1974; Daly 2006), never shorter than one full write (an asynchronous checkpoint must
    land before the next starts) nor longer than `checkpoint_max_interval_min`. Large jobs fail
    more often and write faster (more nodes), so they checkpoint more often and lose less per
    interruption, as the published large runs did."""
    rate_h = (factor(catalog, "hardware_interruptions_per_gpu_day") * gpus + spot_rate_node_day * nodes) / 24
    write_s = state_gb_total / (max(1, nodes) * factor(catalog, "checkpoint_write_gb_s_per_node"))
    stall_s = write_s * (1 - factor(catalog, "checkpoint_async_fraction"))
    auto = interval_min is None
    if auto:
        longest_s = factor(catalog, "checkpoint_max_interval_min") * 60
        young_s = math.sqrt(2 * stall_s / (rate_h / 3600)) if rate_h > 0 else longest_s
        interval_s = min(longest_s, max(write_s, young_s))
    else:
        interval_s = interval_min * 60
    interval_s = max(interval_s, 1e-9)
    per_event_h = interval_s / 3600 / 2 + restart_h(state_gb_total, nodes, catalog)   # redo + restart
    fr = rate_h * per_event_h + stall_s / interval_s
    notes = []
    spot_per_h = spot_rate_node_day * nodes / 24
    if spot_per_h:
        notes.append(f"spot: {spot_per_h * 24:.2f} preemptions/day expected, "
                     f"{spot_per_h * per_event_h:.1%} of run time lost")
    if auto:
        notes.append(f"checkpoint every {interval_s / 60:.1f} min (auto: {rate_h * 24:.2f} interruptions/day, "
                     f"{stall_s:.1f} s stall per checkpoint)")
    return Losses(fr, interval_s / 60, auto, tuple(notes))
