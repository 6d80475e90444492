"""LLM inference per replica of t GPUs (tensor parallel inside one node).

Memory: weights (bytes/param by quantization) + runtime overhead per GPU + KV cache,
2*L*kv_heads*head_dim*bytes per token (MLA: L*(kv_lora_rank + rope)*bytes), reserved for
input+output tokens per sequence. The batch is limited by that memory and by the SLO, not by a
constant cap.
Decode step at batch B, a roofline per operator (the kernels run one after another, so the
weight GEMMs and the attention each take the slower of their memory and compute times):
    D(B) = max(weights / BW, B * 2 N_active / C)             weight GEMMs (MoE: moe_gemm_s)
         + max(B * kv_per_token * ctx / BW, B * A * ctx / C)  attention over the KV cache
         + TP all-reduces,     BW = t*bw*eff_bw, C = t*peak*eff_c (per GPU where the catalog has it)
A = 4 L h for GQA, 2 L heads (2 kv_lora_rank + rope) for MLA's absorbed decode
(decode_attention_flops).
Prefill of one request (compute-bound): P = (2*N*in + 2*L*h*in^2) / (t*peak*eff_prefill), h the
attention width (MLA prefills as MHA at its full head widths: Model.mha_attention_width).
Continuous batching interleaves prefills with decode steps, so each step also carries
B/out prefills on average (the prefill time share):
    TPOT = D(B) + B*P/out,   tokens/s = B / TPOT
    TTFT = D(B) + P + queueing (M/D/1 wait on the prefill share rho, p99 multiplier).
The batch per replica is the one with the most tokens/s whose p99 TPOT and TTFT meet the SLO
(of batches with the same rate, the smallest), found by bisection (best_batch says why that is
exact).
An MoE replica may instead run attention data parallel with its experts expert parallel
(ep=True, engines' DP attention + EP: vLLM's --data-parallel-size t --enable-expert-parallel,
TensorRT-LLM's enable_attention_dp with moe_expert_parallel_size t): each of the t GPUs holds the
dense weights whole, E/t experts and its own B/t sequences' KV cache, once; a step adds the
dispatch and combine all-to-alls of the routed copies (expert_parallel_step_s).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms
from compiler.estimate.factors import factor
from compiler.estimate.memory import kv_bytes_per_token, weight_bytes
from compiler.estimate.models import active_expert_params, expert_params, experts_hit, is_moe
from compiler.spec import InferenceWorkload, Speculative

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
class Serving:
    """How a service is served beyond its model and lengths: the share of prompt tokens a prefix
    cache serves, speculative decoding (None: off), the spread of output lengths (their standard
    deviation over their mean; 0: every output as long as the mean) and the KV cache's precision
    where it is not the weights' own ("": kv_bytes.<quantization>, the catalog's pairing). The
    defaults are plain serving."""
    prefix_cache_hit: float = 0.0
    speculative: Speculative | None = None
    output_cv: float = 0.0
    kv_cache: str = ""

    @staticmethod
    def of(w: InferenceWorkload) -> "Serving":
        return Serving(w.traffic.prefix_cache_hit or 0.0, w.speculative)


PLAIN = Serving()


@dataclass(frozen=True)
class ScaleOut:
    """The network an expert-parallel replica runs its all-to-alls over where it is wider than one
    NVLink domain (wide expert parallelism across nodes): `domain`, the GPUs one NVLink domain joins
    (a node's 8, a GB200 NVL72 rack's 72), and `bw`, each GPU's share of the scale-out fabric in
    bytes/s at the fabric's efficiency (comms.scaleout_bw: one rail a GPU). `dual_batch`: the engine
    splits each decode step into two micro-batches whose all-to-alls overlap the other's compute
    (DeepSeek's decode pipeline, SGLang's two-batch overlap, vLLM's --enable-dbo). A replica within
    one domain needs none (None: every all-to-all over NVLink, none hidden)."""
    domain: int
    bw: float
    dual_batch: bool = False

    @staticmethod
    def of(node_gbps: float, gpus_per_node: int, fabric: str, nvlink_domain: int, catalog: Catalog,
           dual_batch: bool = False) -> "ScaleOut":
        return ScaleOut(max(nvlink_domain, gpus_per_node),
                        comms.scaleout_bw(node_gbps, gpus_per_node, fabric, catalog) if node_gbps > 0 else 0.0,
                        dual_batch)

    def far_share(self, t: int) -> float:
        """The share of a GPU's all-to-all buffer that leaves its NVLink domain: (t - domain) / t."""
        return max(0, t - self.domain) / t if t > 0 else 0.0


def expert_slots(model: Model, t: int) -> int:
    """Experts each of t expert-parallel GPUs holds: ceil(E / t). Where t does not divide E (EP72
    for DeepSeek's 256) engines fill the spare slots with copies of the busiest experts (DeepSeek's
    EPLB: 256 + 32 redundant experts over 72 GPUs, 4 a GPU), so every GPU holds as many."""
    e = model.experts or 1
    return -(-e // max(1, t))


def accepted_tokens(spec: Speculative | None) -> float:
    """Tokens a sequence advances per verification step (Leviathan et al. 2023, eq. 1): with k
    drafted tokens each accepted with probability a, E = (1 - a^(k+1)) / (1 - a); k + 1 at a = 1,
    1 without speculation."""
    if spec is None:
        return 1.0
    a, k = spec.acceptance, spec.draft_tokens
    if a >= 1.0:
        return float(k + 1)
    return (1 - a ** (k + 1)) / (1 - a)


def context_tokens(input_tokens: float, output_tokens: float, catalog: Catalog, serving: Serving = None) -> float:
    """Tokens of KV cache a sequence of the batch holds and attends over, on average over the steps.

    A sequence that decodes o tokens holds input + x where x runs from 0 to o, on average
    `kv_context_fraction_of_output` (a half) of o. Under continuous batching at a steady batch a
    sequence sits in the batch for a share of the steps proportional to its o, so where outputs
    differ in length the batch's mean is weighted by o: E[o x] / E[o] = f E[o^2] / E[o] =
    f o_mean (1 + cv^2), cv = serving.output_cv (their standard deviation over their mean). All
    outputs of one length (cv 0) give input + f o_mean."""
    cv = serving.output_cv if serving is not None else 0.0
    return input_tokens + factor(catalog, "kv_context_fraction_of_output") * output_tokens * (1 + cv * cv)


def kv_quantization(quant: str, serving: Serving = None) -> str:
    """The KV cache's precision: the service's own where it states one, else the weights' (whose
    kv_bytes.<quant> pairs each weight format with its cache: NVFP4 with fp8)."""
    return (serving.kv_cache if serving is not None and serving.kv_cache else "") or quant


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
    KV cache fits beside the weights. prefill_s is the replica's prefill work per request (its
    share of every step under continuous batching), prefill_latency_s one request's prefill as it
    waits for it (the same unless attention runs data parallel: then its attention and dense
    layers run on its own GPU)."""
    weights_gb: float
    kv_per_seq_gb: float
    max_batch: int
    prefill_s: float
    free_gb: float
    prefill_latency_s: float = -1.0

    @property
    def ttft_prefill_s(self) -> float:
        return self.prefill_s if self.prefill_latency_s < 0 else self.prefill_latency_s


def held_weights_gb(model: Model, t: int, quant: str, catalog: Catalog, serving: Serving = PLAIN,
                    ep: bool = False) -> float:
    """Weights a replica of t GPUs holds, all GPUs together: the model's once under tensor
    parallelism; under attention data parallelism with expert parallelism (ep) every GPU holds the
    dense part (attention, shared experts, embeddings) whole and ceil(E/t) experts (expert_slots),
    so the dense part t times and the experts once (more where t does not divide E: the redundant
    copies). A speculative draft sits beside them."""
    weights = weight_bytes(model.params_b * 1e9, quant, catalog) / 1e9
    if ep:
        experts = expert_params(model)
        dense = weight_bytes(model.params_b * 1e9 - experts, quant, catalog) / 1e9
        held = weight_bytes(experts / (model.experts or 1) * expert_slots(model, t) * t, quant, catalog) / 1e9
        weights = t * dense + held
    if serving.speculative is not None:
        # A draft model (or draft heads) lives beside the target's weights.
        weights *= 1 + factor(catalog, f"speculative_draft_weights_share.{serving.speculative.method}")
    return weights


def replica(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
            catalog: Catalog, serving: Serving = PLAIN, ep: bool = False, fabric: ScaleOut | None = None) -> Replica:
    weights = held_weights_gb(model, t, quant, catalog, serving, ep)
    # Paged KV cache (Kwon et al., vLLM): a sequence holds blocks for its input and the output so
    # far, on average `kv_context_fraction_of_output` of it over its decode (context_tokens).
    # Blocks a sequence shares with the prefix cache are still counted for it: what sharing frees
    # holds the cache's other prefixes, so a prefix cache changes the work, not the memory plan.
    held = context_tokens(input_tokens, output_tokens, catalog, serving)
    kv_seq = replica_kv_bytes_per_token(model, t, kv_quantization(quant, serving), catalog, ep) * held / 1e9
    free = (t * gpu.memory_gb * factor(catalog, "inference_memory_utilization")
            - t * factor(catalog, "inference_runtime_overhead_gb") - weights)
    if kv_seq <= 0:
        max_b = 0
    elif ep:
        # Each GPU caches its own sequences: as many on each as its share of the memory holds.
        max_b = t * int(max(0.0, free / t) // kv_seq)
    else:
        max_b = int(max(0.0, free) // kv_seq)
    peak = compute_peak(gpu, quant)
    h = model.mha_attention_width
    # Prefill computes the prompt tokens the prefix cache does not serve; each attends over the
    # whole prompt, cached part included: causal attention over positions c..in costs
    # 2 L h (in^2 - c^2), c the cached tokens (the whole prompt's 2 L h in^2 at c = 0).
    cached = serving.prefix_cache_hit * input_tokens
    routed = active_expert_params(model) if ep else 0.0
    linear = 2 * (model.active_b * 1e9 - routed) * (input_tokens - cached)
    attention = 2 * model.layers * h * (input_tokens ** 2 - cached ** 2)
    experts = 2 * routed * (input_tokens - cached)
    rate = peak * serving_efficiency(catalog, "prefill_efficiency", gpu, quant, 1 if ep else t)
    # The replica's prefill work per request, all t GPUs at work (under ep each GPU prefills its own
    # requests, their experts spread over all). A request waits, under ep, for its dense layers and
    # attention on its own GPU and its experts on all t.
    # Wider than one NVLink domain, the prompt's routed copies cross the fabric at every MoE layer
    # (expert_parallel_prefill_s); each GPU's rail carries its own requests' copies.
    far = expert_parallel_prefill_s(model, t, quant, input_tokens - cached, catalog, fabric) if ep else 0.0
    work = (linear + attention + experts) / (t * rate) + far / t
    latency = (linear + attention) / rate + experts / (t * rate) + far if ep else -1.0
    return Replica(weights, kv_seq, max_b, work, free, latency)


def expert_parallel_prefill_s(model: Model, t: int, quant: str, tokens: float, catalog: Catalog,
                              fabric: ScaleOut | None) -> float:
    """A prompt's dispatch and combine over the scale-out fabric in an expert-parallel replica wider
    than one NVLink domain: at each of L layers its `tokens` x k routed copies of h values go out at
    the GEMMs' input width and come back in 16 bits, (t - domain)/t of them to GPUs of other domains
    over the GPU's own rail: L x tokens x k x h x (d + 2) x (t - domain)/t / bw. Within one domain 0:
    the NVLink share is in the in-node terms fitted on the EP8 runs (ep_copy_bytes_per_hidden)."""
    if fabric is None or fabric.far_share(t) <= 0 or tokens <= 0 or fabric.bw <= 0:
        return 0.0
    k, h = model.experts_per_token or 1, model.hidden
    width = factor(catalog, f"bytes_per_param.{quant if quant in LOW_PRECISION_DISPATCH else 'bf16'}") \
        + factor(catalog, "bytes_per_param.bf16")
    return model.layers * tokens * k * h * width * fabric.far_share(t) / fabric.bw


def serving_efficiency(catalog: Catalog, family: str, gpu: Gpu, quant: str, t: int = 0) -> float:
    """A serving efficiency: <family>.<gpu>.tp<t>, <family>.<gpu>.<quant>, <family>.<gpu>,
    <family>.<quant>, <family>, the first the catalog has. The plain and per-precision values are
    fitted on TensorRT-LLM runs on NVIDIA GPUs; a GPU whose serving engine reaches a different share
    of its peaks (MI300X under vLLM on ROCm) has its own, fitted on that GPU's published runs, and
    where that GPU's published runs show the share differs with the tensor-parallel degree (MI300X:
    the TP8 values carry the all-reduces over Infinity Fabric, a one-GPU replica has none), one per
    degree (t = 0: none asked)."""
    names = ((f"{family}.{gpu.name}.tp{t}",) if t else ()) + (
        f"{family}.{gpu.name}.{quant}", f"{family}.{gpu.name}", f"{family}.{quant}", family)
    return factor(catalog, *names)


def replica_kv_bytes_per_token(model: Model, t: int, quant: str, catalog: Catalog, ep: bool = False) -> float:
    """KV cache bytes per token across a replica of t GPUs: tensor parallelism splits the KV heads,
    and where t exceeds them (Qwen3's 4 at tp 8) each GPU still holds a whole head, so the cache
    is t / kv_heads times the model's. MLA's latent is one head every query head reads: each GPU of
    a tensor-parallel replica holds all of it (t times the model's). Under attention data
    parallelism (ep) a sequence lives on one GPU, its cache once (quant is the cache's precision)."""
    if ep:
        return kv_bytes_per_token(model, quant, catalog)
    kv_heads = 1 if model.is_mla else (model.kv_heads or model.heads or 1)
    return kv_bytes_per_token(model, quant, catalog) * max(1.0, t / kv_heads)


def decode_attention_flops(model: Model) -> float:
    """FLOPs of one decode step's attention per sequence and cached token, over all layers.

    Grouped-query (and multi-head) attention: a score and a value product per query head, 2 x 2 x
    heads x head_dim = 4 L hq. MLA decodes absorbed (DeepSeek-V2, sec. 2.1.2: W_UK folds into the
    query and W_UV into the output), so every head attends over the cached latent itself: the score
    runs at kv_lora_rank + qk_rope_head_dim and the value product at kv_lora_rank, 2 L heads
    (2 kv_lora_rank + rope) FLOPs, 278,528 per layer for DeepSeek-V3 where GQA's form would give
    28,672 (hidden 7,168)."""
    if model.is_mla:
        rank, rope = model.kv_lora_rank or 0, model.qk_rope_head_dim or 0
        return 2 * model.layers * (model.heads or 1) * (2 * rank + rope)
    return 4 * model.layers * model.attention_width


def attention_peak(gpu: Gpu, quant: str) -> tuple[float, str]:
    """The tensor-core peak decode attention runs at, and the quantization whose efficiency it
    reaches, for a KV cache of precision `quant`: its own, except NVFP4, whose checkpoints keep an
    fp8 KV cache (kv_bytes.fp4), so attention's products run at the fp8 peak."""
    kv_quant = "fp8" if quant == "fp4" and compute_peak(gpu, "fp8") else quant
    return compute_peak(gpu, kv_quant), kv_quant


def decode_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                  catalog: Catalog, spec: Speculative | None = None, kv: str = "", ep: bool = False,
                  fabric: ScaleOut | None = None) -> float:
    """One decode step of a batch (kv: the KV cache's precision, "" for the weights'; ep: attention
    data parallel, experts expert parallel). Under speculative decoding the target verifies k + 1
    tokens per sequence in one step (the weights and KV cache read once, the FLOPs k + 1 times
    over), and the draft proposes k tokens first, each costing `speculative_draft_cost.<method>` of
    a plain target step (Leviathan et al.'s c)."""
    width = 1 + (spec.draft_tokens if spec else 0)
    step = _decode_step_s(model, gpu, t, quant, batch, context, catalog, width, kv or quant, ep, fabric)
    if spec is None:
        return step
    plain = _decode_step_s(model, gpu, t, quant, batch, context, catalog, 1, kv or quant, ep, fabric)
    return step + spec.draft_tokens * factor(catalog, f"speculative_draft_cost.{spec.method}") * plain


def _decode_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                   catalog: Catalog, width: int, kv: str, ep: bool = False, fabric: ScaleOut | None = None) -> float:
    """A decode step in which each of `batch` sequences runs `width` query tokens (1: plain decode)."""
    if ep:
        return expert_parallel_step_s(model, gpu, t, quant, batch, context, catalog, width, kv, fabric)
    bw = t * gpu.memory_bandwidth_gb_s * 1e9 * serving_efficiency(catalog, "decode_bandwidth_efficiency", gpu, quant, t)
    c = t * compute_peak(gpu, quant) * serving_efficiency(catalog, "decode_compute_efficiency", gpu, quant, t)
    rows = batch * width
    # Weight GEMMs: the weights are read once per step and used by every sequence of the batch.
    if is_moe(model):
        gemm = moe_gemm_s(model, quant, rows, bw, c, catalog)
    else:
        gemm = max(weight_bytes(model.params_b * 1e9, quant, catalog) / bw, rows * 2 * model.active_b * 1e9 / c)
    # Attention: each sequence reads its own KV cache (a few FLOPs per byte under GQA: memory-bound;
    # MLA's absorbed decode does ~500 FLOPs per cached byte, so it can be compute-bound).
    peak, kv_quant = attention_peak(gpu, kv)
    c_attention = t * peak * serving_efficiency(catalog, "decode_compute_efficiency", gpu, kv_quant, t)
    cache = batch * replica_kv_bytes_per_token(model, t, kv, catalog) * context
    attention = max(cache / bw, rows * decode_attention_flops(model) * context / c_attention)
    comm = 0.0
    if t > 1:  # two all-reduces per layer of the batch's hidden states
        latency = factor(catalog, "tp_allreduce_latency_us") * 1e-6
        comm = 2 * model.layers * (latency + comms.ring_allreduce_s(rows * model.hidden * 2, t,
                                                                    comms.scaleup_bw(gpu, catalog)))
    # The engine's own work per sequence each step (scheduling, sampling, the KV block tables),
    # which no more GPUs shorten: a replica of t GPUs pays it once per sequence.
    host = batch * factor(catalog, "decode_per_sequence_us") * 1e-6
    return gemm + attention + comm + host


# Quantizations whose activations are cast to the weights' width before the expert GEMMs: the
# dispatch all-to-all sends them at that width (fp8; NVFP4's 4 bits with a scale per 16 values,
# TensorRT-LLM's FP4 all-gather); the others send 16-bit activations.
LOW_PRECISION_DISPATCH = ("fp8", "int8", "fp4")


def expert_parallel_step_s(model: Model, gpu: Gpu, t: int, quant: str, batch: int, context: float,
                           catalog: Catalog, width: int = 1, kv: str = "", fabric: ScaleOut | None = None) -> float:
    """A decode step of an MoE replica of t GPUs that runs attention data parallel and its experts
    expert parallel (vLLM's --data-parallel-size t --enable-expert-parallel; TensorRT-LLM's
    attention DP with EP t). Each GPU runs its own b = B / t sequences (engines balance them) and
    takes as long as the others, so the step is one GPU's:

      dense    max(dense weights / bw, b x 2 N_dense / c)   every GPU holds attention, shared
               experts and embeddings whole and reads them each step
      experts  moe_imbalance x (hit share x ceil(E/t) experts' weights / bw + B x 2 k e / t / c):
               ceil(E/t) experts on each GPU (expert_slots), the share of them the batch hits; the
               busiest GPU's share of the routed copies over the mean is moe_imbalance (dropless
               routing)
      copies   L x b k h x ep_copy_bytes_per_hidden / bw: each of the GPU's routed copies is
               routed, permuted into the all-to-all's send buffer, regrouped by expert on arrival
               and summed back by its weight (HBM traffic beyond the GEMMs)
      all2all  L x (2 x tp_allreduce_latency_us + b k h (d + 2) (t - 1) / t / NVLink): the dispatch
               at the GEMMs' input width d and the combine in 16 bits, over NVLink; a replica wider
               than one NVLink domain (fabric) sends (t - domain)/t of each buffer over its GPU's
               rail at the same time, and the slower of the two shares sets each all-to-all
               (comms.domain_all_to_all_s; DeepEP's low-latency kernels' table, within 10%)
      attention  max(b x KV per token x context / bw, b x A x context / c): each sequence's cache
               once, on its GPU (no copy per tensor-parallel rank: MLA's latent is not replicated)
      host     b x decode_per_sequence_us: each GPU's engine schedules its own sequences

    with bw, c one GPU's bandwidth and peak at the one-GPU serving efficiencies, h the hidden
    size, k experts per token, e the parameters of one expert. No tensor-parallel all-reduce.
    Every term is a maximum of affine functions of B with non-negative intercepts, or concave and 0
    at 0 (the experts hit), so D(B)/B never rises: best_batch's bisection stays exact."""
    bw = gpu.memory_bandwidth_gb_s * 1e9 * serving_efficiency(catalog, "decode_bandwidth_efficiency", gpu, quant, 1)
    c = compute_peak(gpu, quant) * serving_efficiency(catalog, "decode_compute_efficiency", gpu, quant, 1)
    rows = batch * width
    b = rows / t
    experts = expert_params(model)
    routed = active_expert_params(model)
    dense = max(weight_bytes(model.params_b * 1e9 - experts, quant, catalog) / bw,
                b * 2 * (model.active_b * 1e9 - routed) / c)
    hit = experts_hit(model, rows) / (model.experts or 1)
    held = experts / (model.experts or 1) * expert_slots(model, t)
    expert_s = factor(catalog, "moe_imbalance") * (weight_bytes(held * hit, quant, catalog) / bw
                                                   + rows * 2 * routed / t / c)
    k, h = model.experts_per_token or 1, model.hidden
    copies = model.layers * b * k * h * factor(catalog, "ep_copy_bytes_per_hidden") / bw
    dispatch = factor(catalog, f"bytes_per_param.{quant if quant in LOW_PRECISION_DISPATCH else 'bf16'}")
    combine = factor(catalog, "bytes_per_param.bf16")
    link = comms.scaleup_bw(gpu, catalog)
    latency = factor(catalog, "tp_allreduce_latency_us") * 1e-6
    domain, far = (fabric.domain, fabric.bw) if fabric is not None else (t, 0.0)
    all_to_all = model.layers * (2 * latency + comms.domain_all_to_all_s(b * k * h * dispatch, t, domain, link, far)
                                 + comms.domain_all_to_all_s(b * k * h * combine, t, domain, link, far))
    peak, kv_quant = attention_peak(gpu, kv or quant)
    c_attention = peak * serving_efficiency(catalog, "decode_compute_efficiency", gpu, kv_quant, 1)
    cache = (batch / t) * replica_kv_bytes_per_token(model, t, kv or quant, catalog, ep=True) * context
    attention = max(cache / bw, b * decode_attention_flops(model) * context / c_attention)
    host = (batch / t) * factor(catalog, "decode_per_sequence_us") * 1e-6
    work = dense + expert_s + copies + attention
    if fabric is not None and fabric.dual_batch:
        # Two micro-batches a step: one's dispatch and combine run while the other computes, so a
        # share ep_decode_overlap of the all-to-alls hides behind the GPU's work, never more than it.
        all_to_all = comms.exposed(all_to_all, factor(catalog, "ep_decode_overlap"), work)
    return work + all_to_all + host


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
                  batch: int, rep: Replica, catalog: Catalog, serving: Serving = PLAIN,
                  ep: bool = False, fabric: ScaleOut | None = None) -> ServingPoint:
    context = context_tokens(input_tokens, output_tokens, catalog, serving)
    kv = kv_quantization(quant, serving)
    d = decode_step_s(model, gpu, t, quant, batch, context, catalog, kv=kv, ep=ep, fabric=fabric)
    if serving.speculative is not None:
        # A step advances each sequence by E tokens: the time per token is the step's over E. At
        # large batches the verification's k + 1 tokens a sequence make the step compute-bound and
        # speculation stops paying; engines then switch it off (vLLM's disable_by_batch_size), so
        # a token costs the cheaper of the two. Both are D(B)/B non-increasing, so is their minimum.
        spec = decode_step_s(model, gpu, t, quant, batch, context, catalog, serving.speculative, kv=kv, ep=ep,
                             fabric=fabric)
        d = min(d, spec / accepted_tokens(serving.speculative))
    p = rep.prefill_s
    # The prefills each output token carries stay B P / out.
    tpot = d + batch * p / max(1, output_tokens)
    rho = min(0.999, batch / max(1, output_tokens) * p / tpot)
    # A request waits for the prefills ahead of it on its server (M/D/1), then its own.
    own = rep.ttft_prefill_s
    wait = rho * own / (2 * (1 - rho))
    ttft = d + own + factor(catalog, "ttft_p99_queue_multiplier") * wait
    mem = (rep.weights_gb + batch * rep.kv_per_seq_gb) / t + factor(catalog, "inference_runtime_overhead_gb")
    return ServingPoint(batch, tpot * factor(catalog, "tpot_p99_multiplier") * 1e3, ttft * 1e3,
                        batch / tpot, mem, d * 1e3, own * 1e3)


def best_batch(model: Model, gpu: Gpu, t: int, quant: str, input_tokens: int, output_tokens: int,
               ttft_ms: float, tpot_ms: float, catalog: Catalog,
               serving: Serving = PLAIN, ep: bool = False,
               max_batch: int = 0, fabric: ScaleOut | None = None) -> tuple[ServingPoint | None, str]:
    """The SLO-meeting batch with the most output tokens/s, or None and why not. ep: attention
    data parallel over the t GPUs with the experts expert parallel (MoE models only); max_batch:
    an engine's limit on the sequences in flight (0: memory and the SLO limit the batch).

    Exact by bisection: D(B) is a sum of maxima of affine functions of B with non-negative
    intercepts, so D(B)/B never rises with B. Then tokens/s = 1 / (D(B)/B + P/out) never falls,
    TPOT = D(B) + B P / out never falls, and the prefill share rho = 1 / (1 + D(B) out / (B P))
    never falls, so neither does TTFT. Both SLO tests hold on a prefix 1..B* of the batches and
    the best rate is B*'s, the largest batch that meets both and fits memory; of the batches
    within TIE of that rate the smallest is taken (the rate is flat once compute binds).
    tests/test_estimate_inference.py checks the bisection against a scan of every batch."""
    if compute_peak(gpu, quant) is None:
        return None, f"no {quant} tensor cores on {gpu.name}"
    if ep and not is_moe(model):
        return None, f"{model.name} has no experts to run expert parallel"
    layout = f"dp{t} ep{t}" if ep else f"tp{t}"
    rep = replica(model, gpu, t, quant, input_tokens, output_tokens, catalog, serving, ep, fabric)
    if rep.max_batch < 1:
        need = rep.weights_gb / t + factor(catalog, "inference_runtime_overhead_gb") + rep.kv_per_seq_gb / t
        return None, (f"does not fit: needs {need:.0f} GB/GPU for {quant} weights and one sequence at "
                      f"{layout}, has {gpu.memory_gb:.0f}")

    def point(b: int) -> ServingPoint:
        return serving_point(model, gpu, t, quant, input_tokens, output_tokens, b, rep, catalog, serving, ep, fabric)

    def meets(pt: ServingPoint) -> bool:
        return pt.tpot_ms <= tpot_ms and pt.ttft_ms <= ttft_ms

    first = point(1)
    if not meets(first):
        return None, (f"misses the SLO at batch 1: TTFT p99 {first.ttft_ms:.0f} ms (SLO {ttft_ms:.0f}), "
                      f"TPOT p99 {first.tpot_ms:.1f} ms (SLO {tpot_ms:.1f}) at {layout}")
    lo, hi = 1, min(rep.max_batch, max_batch) if max_batch > 0 else rep.max_batch
    # meets(point(lo)); the largest that meets is in [lo, hi]
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
