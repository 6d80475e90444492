"""Disaggregated serving: prefill and decode in separate pools (DistServe, Splitwise, vLLM's
NixlConnector), one replica unit of p prefill instances of tensor parallel a and d decode
instances of tensor parallel b, all on one GPU type.

Prefill instance (a GPUs): per request P = the colocated replica's prefill time at tp a
(inference.replica: compute-bound, prefix cache included). Its KV cache, kv bytes per token x
input tokens (the model's, once: each layer and head crosses once whatever the two sides' tensor
parallel), crosses the fabric in T = bytes / (a x the per-GPU share of the node's scale-out
bandwidth, comms.scaleout_bw), after the prefill (added to TTFT, not overlapped by layer).
Decode instance (b GPUs): only decode steps, no prefill interleaved, so
    TPOT = D(B),   tokens/s = B / D(B)
with D the colocated model's decode step (inference.decode_step_s, speculative decoding as there),
and the batch B the largest that fits memory (input + output KV per sequence, as colocated), meets
the TPOT SLO, and leaves TTFT room: D(B) + P + T <= TTFT SLO. Bisection is exact for the same
reason as inference.best_batch (D(B) and D(B)/B are monotone).
TTFT = D(B) + P + T + p99 queueing on the prefill instance (M/D/1 at utilisation rho, the
colocated model's p99 multiplier): rho is the largest that meets the SLO,
    rho = 2 S / (m P + 2 S),   S = SLO - D(B) - P - T,
and an instance prefills rho / P requests/s (never more than 1 / T: the next transfer waits for
the last). A decode instance takes B / D(B) / out requests/s. The unit's rate is
min(p x prefill rate, d x decode rate) requests/s, times out tokens; p and d (1..MAX_INSTANCES
each) are the pair with the most tokens/s per GPU (ties: the fewest GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms, inference
from compiler.estimate.factors import factor
from compiler.estimate.memory import kv_bytes_per_token

MAX_INSTANCES = 8       # prefill (and decode) instances in one replica unit, at most: the search's bound
RHO_MAX = 0.999         # the colocated model's utilisation cap


@dataclass(frozen=True)
class PrefillPool:
    """One prefill instance as sized."""
    tp: int
    prefill_ms: float              # one request's prefill
    transfer_ms: float             # its KV cache over the fabric
    requests_per_s: float          # at the TTFT SLO
    memory_gb_per_gpu: float


@dataclass(frozen=True)
class DecodePool:
    """One decode instance as sized."""
    tp: int
    batch: int
    step_ms: float
    tpot_ms: float                 # p99
    requests_per_s: float
    memory_gb_per_gpu: float


@dataclass(frozen=True)
class Unit:
    """A replica unit: prefill_instances x PrefillPool + decode_instances x DecodePool."""
    prefill: PrefillPool
    decode: DecodePool
    prefill_instances: int
    decode_instances: int
    tokens_per_s: float            # output tokens/s of the unit
    ttft_ms: float                 # p99
    tpot_ms: float                 # p99

    @property
    def gpus(self) -> int:
        return self.prefill_instances * self.prefill.tp + self.decode_instances * self.decode.tp


def kv_transfer_s(model: Model, quant: str, input_tokens: int, tp: int, gpus_per_node: int, node_gbps: float,
                  fabric: str, catalog: Catalog) -> float | None:
    """One request's KV cache from a prefill instance of `tp` GPUs to a decode instance over the
    scale-out fabric (each GPU its rail's share of the node's bandwidth); None without a fabric."""
    if node_gbps <= 0:
        return None
    bw = tp * comms.scaleout_bw(node_gbps, gpus_per_node, fabric, catalog)
    return kv_bytes_per_token(model, quant, catalog) * input_tokens / bw


def _token_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float, catalog: Catalog,
             serving: inference.Serving) -> float:
    """A decode step's time per token of each sequence (speculation as inference.serving_point)."""
    kv = inference.kv_quantization(quant, serving)
    d = inference.decode_step_s(model, gpu, t, quant, batch, context, catalog, kv=kv)
    if serving.speculative is not None:
        spec = inference.decode_step_s(model, gpu, t, quant, batch, context, catalog, serving.speculative, kv=kv)
        d = min(d, spec / inference.accepted_tokens(serving.speculative))
    return d


def decode_pool(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
                tpot_ms: float, step_budget_s: float, catalog: Catalog,
                serving: inference.Serving = inference.PLAIN) -> tuple[DecodePool | None, str]:
    """The decode instance of t GPUs at its best batch: the most tokens/s whose p99 TPOT meets the
    SLO, whose step fits `step_budget_s` (the TTFT left after prefill and transfer) and whose KV
    cache fits; of batches within inference.TIE of that rate, the smallest."""
    if inference.compute_peak(gpu, quant) is None:
        return None, f"no {quant} tensor cores on {gpu.name}"
    rep = inference.replica(model, gpu, t, quant, input_tokens, output_tokens, catalog, serving)
    if rep.max_batch < 1:
        return None, f"decode at tp{t} does not fit: {rep.weights_gb / t:.0f} GB/GPU of weights and one sequence"
    context = inference.context_tokens(input_tokens, output_tokens, catalog, serving)
    mult = factor(catalog, "tpot_p99_multiplier")

    def step(b: int) -> float:
        return _token_s(model, gpu, t, quant, b, context, catalog, serving)

    def meets(b: int) -> bool:
        s = step(b)
        return s * mult * 1e3 <= tpot_ms and s <= step_budget_s

    if not meets(1):
        return None, (f"decode at tp{t} misses the SLO at batch 1: TPOT p99 {step(1) * mult * 1e3:.1f} ms "
                      f"(SLO {tpot_ms:.1f}), or no TTFT left after prefill and transfer")
    lo, hi = 1, rep.max_batch
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if meets(mid):
            lo = mid
        else:
            hi = mid - 1
    floor = lo / step(lo) * (1 - inference.TIE)
    small, big = 1, lo
    while small < big:
        mid = (small + big) // 2
        if mid / step(mid) >= floor:
            big = mid
        else:
            small = mid + 1
    s = step(small)
    mem = (rep.weights_gb + small * rep.kv_per_seq_gb) / t + factor(catalog, "inference_runtime_overhead_gb")
    return DecodePool(t, small, s * 1e3, s * mult * 1e3, small / s / max(1, output_tokens), mem), ""


def prefill_pool(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
                 ttft_ms: float, decode_step_s: float, transfer_s: float, catalog: Catalog,
                 serving: inference.Serving = inference.PLAIN) -> tuple[PrefillPool | None, str]:
    """The prefill instance of t GPUs: requests/s at the TTFT SLO, given the decode step the first
    token waits for and the KV transfer."""
    if inference.compute_peak(gpu, quant) is None:
        return None, f"no {quant} tensor cores on {gpu.name}"
    rep = inference.replica(model, gpu, t, quant, input_tokens, output_tokens, catalog, serving)
    kv_prompt = (inference.replica_kv_bytes_per_token(model, t, inference.kv_quantization(quant, serving), catalog)
                 * input_tokens / 1e9)
    if rep.free_gb < kv_prompt:
        return None, f"prefill at tp{t} does not fit: weights and one prompt's KV cache"
    p = rep.prefill_s
    slack = ttft_ms / 1e3 - decode_step_s - p - transfer_s
    if slack <= 0:
        return None, (f"prefill at tp{t} misses the TTFT SLO unloaded: prefill {p * 1e3:.0f} ms + transfer "
                      f"{transfer_s * 1e3:.0f} ms + a decode step (SLO {ttft_ms:.0f})")
    m = factor(catalog, "ttft_p99_queue_multiplier")
    rho = min(RHO_MAX, 2 * slack / (m * p + 2 * slack))
    rate = rho / p if transfer_s <= 0 else min(rho / p, 1 / transfer_s)
    mem = (rep.weights_gb + kv_prompt) / t + factor(catalog, "inference_runtime_overhead_gb")
    return PrefillPool(t, p * 1e3, transfer_s * 1e3, rate, mem), ""


def ttft_s(prefill: PrefillPool, decode: DecodePool, catalog: Catalog) -> float:
    """p99 TTFT at the prefill instance's utilisation."""
    p = prefill.prefill_ms / 1e3
    rho = prefill.requests_per_s * p
    wait = rho * p / (2 * (1 - rho)) if rho < 1 else float("inf")
    return decode.step_ms / 1e3 + p + prefill.transfer_ms / 1e3 + factor(catalog, "ttft_p99_queue_multiplier") * wait


def best_unit(prefill: PrefillPool, decode: DecodePool, output_tokens: int, catalog: Catalog) -> Unit:
    """The (p, d) with the most output tokens/s per GPU, p, d in 1..MAX_INSTANCES (ties: fewest GPUs,
    then fewest prefill instances)."""
    best, key = None, None
    for p in range(1, MAX_INSTANCES + 1):
        for d in range(1, MAX_INSTANCES + 1):
            rate = min(p * prefill.requests_per_s, d * decode.requests_per_s)
            gpus = p * prefill.tp + d * decode.tp
            k = (-rate / gpus, gpus, p)
            if key is None or k < key:
                best, key = (p, d, rate), k
    p, d, rate = best
    return Unit(prefill, decode, p, d, rate * output_tokens, ttft_s(prefill, decode, catalog) * 1e3, decode.tpot_ms)


def unit(model: Model, gpu: Gpu, prefill_tp: int, decode_tp: int, quant: str, input_tokens: int,
         output_tokens: int, ttft_ms: float, tpot_ms: float, gpus_per_node: int, node_gbps: float, fabric: str,
         catalog: Catalog, serving: inference.Serving = inference.PLAIN) -> tuple[Unit | None, str]:
    """The replica unit of prefill instances at tp `prefill_tp` and decode instances at `decode_tp`,
    or None and why not."""
    transfer = kv_transfer_s(model, inference.kv_quantization(quant, serving), input_tokens, prefill_tp, gpus_per_node,
                             node_gbps, fabric, catalog)
    if transfer is None:
        return None, "no scale-out fabric to move the KV cache from prefill to decode"
    if inference.compute_peak(gpu, quant) is None:
        return None, f"no {quant} tensor cores on {gpu.name}"
    rep = inference.replica(model, gpu, prefill_tp, quant, input_tokens, output_tokens, catalog, serving)
    budget = ttft_ms / 1e3 - rep.prefill_s - transfer
    if budget <= 0:
        return None, (f"prefill at tp{prefill_tp} misses the TTFT SLO unloaded: {rep.prefill_s * 1e3:.0f} ms + "
                      f"transfer {transfer * 1e3:.0f} ms (SLO {ttft_ms:.0f})")
    dec, why = decode_pool(model, gpu, decode_tp, quant, input_tokens, output_tokens, tpot_ms, budget, catalog,
                           serving)
    if dec is None:
        return None, why
    pre, why = prefill_pool(model, gpu, prefill_tp, quant, input_tokens, output_tokens, ttft_ms, dec.step_ms / 1e3,
                            transfer, catalog, serving)
    if pre is None:
        return None, why
    return best_unit(pre, dec, output_tokens, catalog), ""
