"""LLM inference per replica of t GPUs (tensor parallel inside one node).

Memory: weights (bytes/param by quantization) + runtime overhead per GPU + KV cache,
2*L*kv_heads*head_dim*bytes per token, reserved for input+output tokens per sequence. The
batch is limited by that memory and by the SLO, not by a constant cap.
Decode step at batch B, a roofline per operator (the kernels run one after another, so the
weight GEMMs and the attention each take the slower of their memory and compute times):
    D(B) = max(weights / BW, B * 2 N_active / C)             weight GEMMs
         + max(B * kv_per_token * ctx / BW, B * 4 L h ctx / C)  attention over the KV cache
         + TP all-reduces,     BW = t*bw*eff_bw, C = t*peak*eff_c
Prefill of one request (compute-bound): P = (2*N*in + 2*L*h*in^2) / (t*peak*eff_prefill).
Continuous batching interleaves prefills with decode steps, so each step also carries
B/out prefills on average (the prefill time share):
    TPOT = D(B) + B*P/out,   tokens/s = B / TPOT
    TTFT = D(B) + P + queueing (M/D/1 wait on the prefill share rho, p99 multiplier).
The batch per replica is the one with the most tokens/s whose p99 TPOT and TTFT meet the SLO
(of batches with the same rate, the smallest), found by bisection (best_batch says why that is
exact).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms
from compiler.estimate.factors import factor
from compiler.estimate.memory import kv_bytes_per_token, weight_bytes
from compiler.spec import InferenceWorkload

COMPUTE_KEYS = {  # which tensor-core peak each quantization runs its GEMMs at
    "bf16": ("bf16", "fp16"),
    "fp8": ("fp8", "bf16", "fp16"),
    "int8": ("int8", "fp8", "bf16", "fp16"),
    "int4": ("bf16", "fp16"),       # weight-only: dequantize to 16 bits
}


def compute_peak(gpu: Gpu, quantization: str) -> float:
    for key in COMPUTE_KEYS.get(quantization, ("bf16",)):
        if gpu.tflops.get(key):
            return gpu.tflops[key] * 1e12
    return max(gpu.tflops.values()) * 1e12


TIE = 1e-9  # relative: rates closer than this are the same rate


@dataclass(frozen=True)
class ServingPoint:
    batch: int
    tpot_ms: float          # p99
    ttft_ms: float          # p99
    tokens_per_s: float     # output tokens/s of the replica
    memory_gb_per_gpu: float
    decode_ms: float
    prefill_ms: float


@dataclass(frozen=True)
class Replica:
    """Fixed quantities of one replica: memory, per-request prefill and the most sequences whose
    KV cache fits beside the weights."""
    weights_gb: float
    kv_per_seq_gb: float
    max_batch: int
    prefill_s: float
    free_gb: float


def replica(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
            catalog: Catalog) -> Replica:
    weights = weight_bytes(model.params_b * 1e9, quant, catalog) / 1e9
    kv_seq = kv_bytes_per_token(model, quant, catalog) * (input_tokens + output_tokens) / 1e9
    free = (t * gpu.memory_gb * factor(catalog, "inference_memory_utilization")
            - t * factor(catalog, "inference_runtime_overhead_gb") - weights)
    max_b = int(max(0.0, free) // kv_seq) if kv_seq > 0 else 0
    peak = compute_peak(gpu, quant)
    h = model.hidden
    prefill_flops = 2 * model.active_b * 1e9 * input_tokens + 2 * model.layers * h * input_tokens ** 2
    return Replica(weights, kv_seq, max_b, prefill_flops / (t * peak * factor(catalog, "prefill_efficiency")), free)


def decode_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                  catalog: Catalog) -> float:
    bw = t * gpu.memory_bandwidth_gb_s * 1e9 * factor(catalog, "decode_bandwidth_efficiency")
    c = t * compute_peak(gpu, quant) * factor(catalog, "decode_compute_efficiency")
    # Weight GEMMs: the weights are read once per step and used by every sequence of the batch.
    gemm = max(weight_bytes(model.params_b * 1e9, quant, catalog) / bw, batch * 2 * model.active_b * 1e9 / c)
    # Attention: each sequence reads its own KV cache (a few FLOPs per byte: memory-bound).
    kv = batch * kv_bytes_per_token(model, quant, catalog) * context
    attention = max(kv / bw, batch * 4 * model.layers * model.hidden * context / c)
    comm = 0.0
    if t > 1:  # two all-reduces per layer of the batch's hidden states
        latency = factor(catalog, "tp_allreduce_latency_us") * 1e-6
        comm = 2 * model.layers * (latency + comms.ring_allreduce_s(batch * model.hidden * 2, t,
                                                                    comms.scaleup_bw(gpu, catalog)))
    return gemm + attention + comm


def serving_point(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
                  batch: int, rep: Replica, catalog: Catalog) -> ServingPoint:
    context = input_tokens + factor(catalog, "kv_context_fraction_of_output") * output_tokens
    d = decode_step_s(model, gpu, t, quant, batch, context, catalog)
    p = rep.prefill_s
    tpot = d + batch * p / max(1, output_tokens)
    rho = min(0.999, batch / max(1, output_tokens) * p / tpot)
    wait = rho * p / (2 * (1 - rho))
    ttft = d + p + factor(catalog, "ttft_p99_queue_multiplier") * wait
    mem = (rep.weights_gb + batch * rep.kv_per_seq_gb) / t + factor(catalog, "inference_runtime_overhead_gb")
    return ServingPoint(batch, tpot * factor(catalog, "tpot_p99_multiplier") * 1e3, ttft * 1e3,
                        batch / tpot, mem, d * 1e3, p * 1e3)


def best_batch(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
               ttft_ms: float, tpot_ms: float, catalog: Catalog) -> tuple[ServingPoint | None, str]:
    """The SLO-meeting batch with the most output tokens/s, or None and why not.

    Exact by bisection: D(B) is a sum of maxima of affine functions of B with non-negative
    intercepts, so D(B)/B never rises with B. Then tokens/s = 1 / (D(B)/B + P/out) never falls,
    TPOT = D(B) + B P / out never falls, and the prefill share rho = 1 / (1 + D(B) out / (B P))
    never falls, so neither does TTFT. Both SLO tests hold on a prefix 1..B* of the batches and
    the best rate is B*'s, the largest batch that meets both and fits memory; of the batches
    within TIE of that rate the smallest is taken (the rate is flat once compute binds).
    tests/test_estimate_inference.py checks the bisection against a scan of every batch."""
    rep = replica(model, gpu, t, quant, input_tokens, output_tokens, catalog)
    if rep.max_batch < 1:
        need = rep.weights_gb / t + factor(catalog, "inference_runtime_overhead_gb") + rep.kv_per_seq_gb / t
        return None, (f"does not fit: needs {need:.0f} GB/GPU for {quant} weights and one sequence at "
                      f"tp{t}, has {gpu.memory_gb:.0f}")

    def point(b: int) -> ServingPoint:
        return serving_point(model, gpu, t, quant, input_tokens, output_tokens, b, rep, catalog)

    def meets(pt: ServingPoint) -> bool:
        return pt.tpot_ms <= tpot_ms and pt.ttft_ms <= ttft_ms

    first = point(1)
    if not meets(first):
        return None, (f"misses the SLO at batch 1: TTFT p99 {first.ttft_ms:.0f} ms (SLO {ttft_ms:.0f}), "
                      f"TPOT p99 {first.tpot_ms:.1f} ms (SLO {tpot_ms:.1f}) at tp{t}")
    lo, hi = 1, rep.max_batch          # meets(point(lo)); the largest that meets is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if meets(point(mid)):
            lo = mid
        else:
            hi = mid - 1
    # Where every term of D(B) is compute-bound tokens/s is flat: a larger batch only adds
    # latency. Take the smallest batch within TIE of the best rate (again by bisection).
    floor = point(lo).tokens_per_s * (1 - TIE)
    small, big = 1, lo
    while small < big:
        mid = (small + big) // 2
        if point(mid).tokens_per_s >= floor:
            big = mid
        else:
            small = mid + 1
    return point(small), ""


def demand_series(w: InferenceWorkload, horizon: int) -> tuple[float, ...]:
    """Output tokens/s the service must carry in each month of the horizon (0 before its window)."""
    t = w.traffic
    base = t.peak_rps * t.output_tokens
    return tuple(0.0 if m < w.window.start_month
                 else base * (1.0 + t.growth_per_month) ** (m - w.window.start_month)
                 for m in range(horizon))
