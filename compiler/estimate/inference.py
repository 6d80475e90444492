"""LLM inference per replica of t GPUs (tensor parallel inside one node).

Memory: weights (bytes/param by quantization) + runtime overhead per GPU + KV cache,
2*L*kv_heads*head_dim*bytes per token, reserved for input+output tokens per sequence.
Decode step at batch B (bandwidth-bound, compute where it binds):
    D(B) = max(bytes_moved / (t*bw*eff_bw), flops / (t*peak*eff_c)) + TP all-reduces
    bytes_moved = weights + B * kv_per_token * mean context
Prefill of one request (compute-bound): P = (2*N*in + 2*L*h*in^2) / (t*peak*eff_prefill).
Continuous batching interleaves prefills with decode steps, so each step also carries
B/out prefills on average (the prefill time share):
    TPOT = D(B) + B*P/out,   tokens/s = B / TPOT
    TTFT = D(B) + P + queueing (M/D/1 wait on the prefill share rho, p99 multiplier).
The batch per replica is the one with the most tokens/s whose p99 TPOT and TTFT meet the SLO.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms
from compiler.estimate.factors import factor
from compiler.estimate.memory import kv_bytes_per_token, weight_bytes

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
    """Fixed quantities of one replica: memory, per-request prefill and max batch."""
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
    max_b = int(min(factor(catalog, "max_batch"), max(0.0, free) // kv_seq)) if kv_seq > 0 else 0
    peak = compute_peak(gpu, quant)
    h = model.hidden
    prefill_flops = 2 * model.active_b * 1e9 * input_tokens + 2 * model.layers * h * input_tokens ** 2
    return Replica(weights, kv_seq, max_b, prefill_flops / (t * peak * factor(catalog, "prefill_efficiency")), free)


def decode_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                  catalog: Catalog) -> float:
    kv_tok = kv_bytes_per_token(model, quant, catalog)
    moved = weight_bytes(model.params_b * 1e9, quant, catalog) + batch * kv_tok * context
    t_bw = moved / (t * gpu.memory_bandwidth_gb_s * 1e9 * factor(catalog, "decode_bandwidth_efficiency"))
    flops = batch * (2 * model.active_b * 1e9 + 4 * model.layers * model.hidden * context)
    t_c = flops / (t * compute_peak(gpu, quant) * factor(catalog, "decode_compute_efficiency"))
    comm = 0.0
    if t > 1:  # two all-reduces per layer of the batch's hidden states
        latency = factor(catalog, "tp_allreduce_latency_us") * 1e-6
        comm = 2 * model.layers * (latency + comms.ring_allreduce_s(batch * model.hidden * 2, t,
                                                                    comms.scaleup_bw(gpu, catalog)))
    return max(t_bw, t_c) + comm


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
    """The SLO-meeting batch with the most output tokens/s, or None and why not."""
    rep = replica(model, gpu, t, quant, input_tokens, output_tokens, catalog)
    if rep.max_batch < 1:
        need = rep.weights_gb / t + factor(catalog, "inference_runtime_overhead_gb") + rep.kv_per_seq_gb / t
        return None, (f"does not fit: needs {need:.0f} GB/GPU for {quant} weights and one sequence at "
                      f"tp{t}, has {gpu.memory_gb:.0f}")
    best: ServingPoint | None = None
    first = None
    for b in range(1, rep.max_batch + 1):
        pt = serving_point(model, gpu, t, quant, input_tokens, output_tokens, b, rep, catalog)
        first = first or pt
        if pt.tpot_ms <= tpot_ms and pt.ttft_ms <= ttft_ms:
            if best is None or pt.tokens_per_s > best.tokens_per_s:
                best = pt
        elif pt.tpot_ms > tpot_ms and best is not None:
            break  # TPOT only grows with the batch
    if best is None:
        return None, (f"misses the SLO at batch 1: TTFT p99 {first.ttft_ms:.0f} ms (SLO {ttft_ms:.0f}), "
                      f"TPOT p99 {first.tpot_ms:.1f} ms (SLO {tpot_ms:.1f}) at tp{t}")
    return best, ""
