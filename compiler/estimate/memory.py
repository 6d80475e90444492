"""Memory: model states, activations, KV cache. Bytes unless a name says _gb (10^9 bytes).

Model state per parameter (Rajbhandari et al., ZeRO): weights + gradients + optimizer
(+ an fp32 master copy under mixed precision). bf16 + AdamW: 2 + 2 + 8 + 4 = 16 bytes.
ZeRO stage 1 shards optimizer + master over the data-parallel group, stage 2 also the
gradients, stage 3 (FSDP) also the weights. Experts shard over their own data-parallel group.
Activations (Korthikanti et al. 2022, eq. 2 and sec. 4): per layer s*b*h*(34 + 5*a*s/h);
with sequence parallelism and selective recompute s*b*h*34/t. Under 1F1B the first
pipeline stage holds p micro-batches of L/p layers: L layers' worth in total.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.candidates import Layout
from compiler.catalog.model import Catalog, Model
from compiler.estimate.factors import factor
from compiler.estimate import moe
from compiler.estimate.models import expert_params, is_moe, resolve_model
from compiler.spec import TrainingWorkload

GB = 1e9


def state_bytes_per_param(precision: str, optimizer: str, catalog: Catalog) -> tuple[float, float, float]:
    """(weights, gradients, optimizer incl. master copy) bytes per parameter."""
    w = factor(catalog, f"bytes_weights.{precision}")
    g = factor(catalog, f"bytes_grads.{precision}")
    o = factor(catalog, f"bytes_optimizer.{optimizer}")
    if precision != "fp32":  # mixed precision keeps an fp32 master copy (not 8-bit Adam)
        o += factor(catalog, f"bytes_master_weights.{optimizer}", "bytes_master_weights")
    return w, g, o


def model_state_bytes(params: float, precision: str, optimizer: str, catalog: Catalog) -> float:
    """Whole-model training state, unsharded."""
    return params * sum(state_bytes_per_param(precision, optimizer, catalog))


def checkpoint_tb(w: TrainingWorkload, catalog: Catalog) -> float:
    """What a training job's checkpoints hold: keep * whole-model training state, in TB (10^12
    bytes). A model validate does not know has no candidates, so it stores nothing."""
    model = resolve_model(w.model, catalog)
    if model is None:
        return 0.0
    return w.checkpoint.keep * model_state_bytes(model.params_b * 1e9, w.precision, w.optimizer, catalog) / 1e12


@dataclass(frozen=True)
class TrainingMemory:
    states_gb: float
    activations_gb: float
    buffer_gb: float

    @property
    def total_gb(self) -> float:
        return self.states_gb + self.activations_gb + self.buffer_gb


def params_per_gpu(model: Model, layout: Layout) -> tuple[float, float]:
    """(dense, expert) parameters held by one GPU before ZeRO sharding. Under expert parallelism
    each rank holds E/ep experts whole (expert tensor parallel 1); without it the tensor-parallel
    ranks split every expert as they split the dense layers."""
    experts = expert_params(model)
    dense = model.params_b * 1e9 - experts
    return dense / (layout.tp * layout.pp), experts / (layout.pp * expert_shards(layout.tp, layout.ep))


def expert_shards(tp: int, ep: int) -> int:
    """Ranks one pipeline stage's experts are split over: ep whole-expert groups, or tp slices."""
    return ep if ep > 1 else tp


def expert_replicas(tp: int, cp: int, dp: int, ep: int) -> int:
    """Ranks that hold the same expert shard (its data-parallel group, which ZeRO shards over):
    tp x cp x dp / ep under expert parallelism (folded over them), dp without it."""
    return max(1, tp * cp * dp // ep) if ep > 1 else dp


def states_per_gpu_bytes(model: Model, layout: Layout, precision: str, optimizer: str,
                         catalog: Catalog) -> float:
    dense, experts = params_per_gpu(model, layout)
    return sharded_state_bytes(dense, experts, layout.dp, expert_replicas(layout.tp, layout.cp, layout.dp, layout.ep),
                               layout.zero, state_bytes_per_param(precision, optimizer, catalog))


def sharded_state_bytes(dense: float, experts: float, dp: int, expert_dp: int, zero: int,
                        per_param: tuple[float, float, float]) -> float:
    """Model-state bytes on one GPU: its (dense, expert) parameters before ZeRO sharding
    (params_per_gpu), sharded by the ZeRO stage; per_param is state_bytes_per_param's."""
    w, g, o = per_param
    total = 0.0
    # Dense parameters are replicated over the dp ranks, experts over expert_replicas' ranks.
    for params, shard in ((dense, dp), (experts, expert_dp)):
        if params == 0:
            continue
        zw = shard if zero >= 3 else 1
        zg = shard if zero >= 2 else 1
        zo = shard if zero >= 1 else 1
        total += params * (w / zw + g / zg + o / zo)
    return total


def activation_bytes_per_gpu(model: Model, layout: Layout, seq_len: int, micro_batch: int,
                             precision: str, catalog: Catalog) -> float:
    """Korthikanti with sequence parallel + selective recompute: s*b*h*34/t per layer,
    L layers in flight on the first pipeline stage; context parallel splits s. Full recompute
    keeps 2 s*b*h/t per layer and one layer's activations."""
    s = seq_len / layout.cp
    per_layer = s * micro_batch * model.hidden * factor(catalog, "activation_bytes_per_sbh") / layout.tp
    scale = factor(catalog, f"activation_scale.{precision}")
    logits = s * micro_batch * (model.vocab or 0) * factor(catalog, "logits_bytes_per_token_vocab") / layout.tp
    if is_moe(model):   # the routed copies' inputs and expert intermediates (moe.activation_bytes_per_token)
        if layout.recompute == "moe":
            # The MoE layers are recomputed too (Megatron --recompute-modules moe): each keeps its
            # input in place of the MLP's share and the routed copies.
            mlp = factor(catalog, "activation_mlp_bytes_per_sbh") - factor(catalog, "activation_checkpoint_bytes_per_sbh")
            return (per_layer - s * micro_batch * model.hidden * mlp / layout.tp) * model.layers * scale + logits
        per_layer += s * micro_batch * moe.activation_bytes_per_token(model, catalog) / layout.tp
    if layout.recompute == "full":
        # Full recompute keeps each layer's input and rebuilds one layer's activations at a time
        # in the backward pass (Chen et al. 2016; Megatron --recompute-granularity full).
        kept = s * micro_batch * model.hidden * factor(catalog, "activation_checkpoint_bytes_per_sbh") / layout.tp
        return (kept * model.layers + per_layer) * scale + logits
    return per_layer * model.layers * scale + logits


def training_memory(model: Model, layout: Layout, seq_len: int, precision: str, optimizer: str,
                    catalog: Catalog) -> TrainingMemory:
    mb = int(factor(catalog, "micro_batch_size"))
    return TrainingMemory(
        states_gb=states_per_gpu_bytes(model, layout, precision, optimizer, catalog) / GB,
        activations_gb=activation_bytes_per_gpu(model, layout, seq_len, mb, precision, catalog) / GB,
        buffer_gb=factor(catalog, "training_memory_buffer_gb"))


def usable_training_gb(gpu_memory_gb: float, catalog: Catalog) -> float:
    return gpu_memory_gb * (1 - factor(catalog, "memory_headroom"))


# ---- inference ----

def weight_bytes(params: float, quantization: str, catalog: Catalog) -> float:
    """Weights at the quantized width: 70e9 params at bf16 = 140 GB."""
    return params * factor(catalog, f"bytes_per_param.{quantization}")


def kv_bytes_per_token(model: Model, quantization: str, catalog: Catalog) -> float:
    """2 (K and V) * layers * kv_heads * head_dim * bytes. Llama-2-70B at 16 bits: 320 KiB.
    MLA caches a latent and a rotary key instead: layers * (kv_lora_rank + qk_rope_head_dim) * bytes
    (DeepSeek-V3 at 16 bits: 61 x 576 x 2 = 70,272 bytes)."""
    return model.layers * model.kv_values_per_token_layer * factor(catalog, f"kv_bytes.{quantization}")
