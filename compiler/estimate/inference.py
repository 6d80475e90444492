"""LLM inference per replica of t GPUs (tensor parallel inside one node).

Memory: weights (bytes/param by quantization) + runtime overhead per GPU + KV cache,
2*L*kv_heads*head_dim*bytes per token, reserved for input+output tokens per sequence. The
batch is limited by that memory and by the SLO, not by a constant cap.
Decode step at batch B, a roofline per operator (the kernels run one after another, so the
weight GEMMs and the attention each take the slower of their memory and compute times):
    D(B) = max(weights / BW, B * 2 N_active / C)             weight GEMMs (MoE: moe_gemm_s)
         + max(B * kv_per_token * ctx / BW, B * 4 L h ctx / C)  attention over the KV cache
         + TP all-reduces,     BW = t*bw*eff_bw, C = t*peak*eff_c (per GPU where the catalog has it)
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
from compiler.estimate.models import active_expert_params, expert_params, experts_hit, is_moe
from compiler.spec import InferenceWorkload

COMPUTE_KEYS = {  # which tensor-core peak each quantization runs its GEMMs at
    "bf16": ("bf16", "fp16"),
    "fp8": ("fp8", "bf16", "fp16"),
    "int8": ("int8", "fp8", "bf16", "fp16"),
    "int4": ("bf16", "fp16"),       # weight-only: dequantize to 16 bits
    "fp4": ("fp4",),                # NVFP4 weights and activations: Blackwell's FP4 tensor cores only
}
NEEDS_OWN_PEAK = ("fp4",)   # a quantization no other tensor core runs: a GPU without it cannot serve it


def compute_peak(gpu: Gpu, quantization: str) -> float | None:
    """The tensor-core peak the quantization's GEMMs run at; None where the GPU cannot run it."""
    for key in COMPUTE_KEYS.get(quantization, ("bf16",)):
        if gpu.tflops.get(key):
            return gpu.tflops[key] * 1e12
    if quantization in NEEDS_OWN_PEAK:
        return None
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
    # Paged KV cache (Kwon et al., vLLM): a sequence holds blocks for its input and the output so
    # far, on average `kv_context_fraction_of_output` of it over its decode.
    held = input_tokens + factor(catalog, "kv_context_fraction_of_output") * output_tokens
    kv_seq = replica_kv_bytes_per_token(model, t, quant, catalog) * held / 1e9
    free = (t * gpu.memory_gb * factor(catalog, "inference_memory_utilization")
            - t * factor(catalog, "inference_runtime_overhead_gb") - weights)
    max_b = int(max(0.0, free) // kv_seq) if kv_seq > 0 else 0
    peak = compute_peak(gpu, quant)
    h = model.attention_width
    prefill_flops = 2 * model.active_b * 1e9 * input_tokens + 2 * model.layers * h * input_tokens ** 2
    efficiency = serving_efficiency(catalog, "prefill_efficiency", gpu, quant)
    return Replica(weights, kv_seq, max_b, prefill_flops / (t * peak * efficiency), free)


def serving_efficiency(catalog: Catalog, family: str, gpu: Gpu, quant: str) -> float:
    """A serving efficiency: <family>.<gpu>.<quant>, <family>.<gpu>, <family>.<quant>, <family>,
    the first the catalog has. The plain and per-precision values are fitted on TensorRT-LLM runs
    on NVIDIA GPUs; a GPU whose serving engine reaches a different share of its peaks (MI300X under
    vLLM on ROCm) has its own, fitted on that GPU's published runs."""
    return factor(catalog, f"{family}.{gpu.name}.{quant}", f"{family}.{gpu.name}", f"{family}.{quant}", family)


def replica_kv_bytes_per_token(model: Model, t: int, quant: str, catalog: Catalog) -> float:
    """KV cache bytes per token across a replica of t GPUs: tensor parallelism splits the KV heads,
    and where t exceeds them (Qwen3's 4 at tp 8) each GPU still holds a whole head, so the cache
    is t / kv_heads times the model's."""
    kv_heads = model.kv_heads or model.heads or 1
    return kv_bytes_per_token(model, quant, catalog) * max(1.0, t / kv_heads)


def decode_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                  catalog: Catalog) -> float:
    bw = t * gpu.memory_bandwidth_gb_s * 1e9 * serving_efficiency(catalog, "decode_bandwidth_efficiency", gpu, quant)
    c = t * compute_peak(gpu, quant) * serving_efficiency(catalog, "decode_compute_efficiency", gpu, quant)
    # Weight GEMMs: the weights are read once per step and used by every sequence of the batch.
    if is_moe(model):
        gemm = moe_gemm_s(model, quant, batch, bw, c, catalog)
    else:
        gemm = max(weight_bytes(model.params_b * 1e9, quant, catalog) / bw, batch * 2 * model.active_b * 1e9 / c)
    # Attention: each sequence reads its own KV cache (a few FLOPs per byte: memory-bound).
    kv = batch * replica_kv_bytes_per_token(model, t, quant, catalog) * context
    attention = max(kv / bw, batch * 4 * model.layers * model.attention_width * context / c)
    comm = 0.0
    if t > 1:  # two all-reduces per layer of the batch's hidden states
        latency = factor(catalog, "tp_allreduce_latency_us") * 1e-6
        comm = 2 * model.layers * (latency + comms.ring_allreduce_s(batch * model.hidden * 2, t,
                                                                    comms.scaleup_bw(gpu, catalog)))
    # The engine's own work per sequence each step (scheduling, sampling, the KV block tables),
    # which no more GPUs shorten: a replica of t GPUs pays it once per sequence.
    host = batch * factor(catalog, "decode_per_sequence_us") * 1e-6
    return gemm + attention + comm + host


def moe_gemm_s(model: Model, quant: str, batch: int, bw: float, c: float, catalog: Catalog) -> float:
    """An MoE decode step's weight GEMMs. The dense part (attention projections, shared experts,
    embeddings) is the dense roofline. Each layer reads only the experts its batch hits,
    experts_hit(B) of E, and each hit expert multiplies the few rows routed to it, m = B k / hits:
    too few to hide streaming its weights behind the math, so the two add (the roofline's sum, whose
    rate m / (m + C bytes / 2 BW) of C is the half-point form moe.py uses; DeepGEMM's grouped GEMMs
    at m = 256..1024 follow it). Both parts are concave in B and 0 at 0, so D(B)/B never rises."""
    experts = expert_params(model)
    routed = active_expert_params(model)
    dense = max(weight_bytes(model.params_b * 1e9 - experts, quant, catalog) / bw,
                batch * 2 * (model.active_b * 1e9 - routed) / c)
    hit = experts_hit(model, batch) / (model.experts or 1)
    return dense + weight_bytes(experts * hit, quant, catalog) / bw + batch * 2 * routed / c


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
    if compute_peak(gpu, quant) is None:
        return None, f"no {quant} tensor cores on {gpu.name}"
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
