"""Mixture-of-experts terms: what running experts costs beyond their FLOPs at the dense rate.

Grouped expert GEMMs. A token's k experts each multiply it by their own weights, so each expert
GEMM has as many rows as tokens were routed to that expert: m. Where m is small the GEMM streams
its weights for few FLOPs and its tiles run part empty, so it reaches a share

    g(m) = m / (m + moe_gemm_half_tokens)

of the rate a large GEMM reaches (half at m = moe_gemm_half_tokens). The form is the roofline's
sum of weight-streaming and math time, and its half point is read off DeepGEMM's published grouped
GEMM rates (docs/performance-model.md). In training, one rank's experts receive the tokens of its
whole expert-parallel group:

    m = ep * tokens per rank * k / E

so expert parallelism multiplies the rows each expert GEMM gets, and tensor parallelism without it
leaves each of the E experts a sliver of every micro-batch.

The rest of an MoE layer. Grouped GEMMs with many rows reach `moe_layer_efficiency` of a dense
GEMM's rate; routing, the permutation of token copies into expert order and back, dispatch
buffers and (in fp8) each copy's cast with its scales cost each routed copy of a token
`moe_copy_bytes_per_hidden.<precision>` bytes per hidden unit through HBM (copies_s_per_token).
Both are fitted on published MoE runs (docs/performance-model.md). The copies' cost is what keeps
fine-grained experts (DeepSeek-V3's 256 top-8, Qwen3's 128 top-8) from gaining what fp8's math
saves, where Mixtral's 8 large experts top-2 do.

Load imbalance. Routing is never even: the busiest rank of an expert-parallel group receives
`moe_imbalance` times the mean, and the group waits for it (experts' compute and the all-to-all).
With ep = 1 every rank holds every expert and there is no busiest rank.
"""

from __future__ import annotations

from compiler.catalog.model import Catalog, Model
from compiler.estimate.factors import factor, per
from compiler.estimate.models import is_moe


def gemm_efficiency(rows: float, catalog: Catalog) -> float:
    """g(m): the share of a large GEMM's rate an expert GEMM of `rows` tokens reaches."""
    if rows <= 0:
        return 0.0
    return rows / (rows + factor(catalog, "moe_gemm_half_tokens"))


def rows_per_expert(model: Model, ep: int, tokens_per_rank: float) -> float:
    """m: tokens each local expert's GEMM gets when every rank of an expert-parallel group of `ep`
    routes `tokens_per_rank` tokens to k of E experts (uniformly, in expectation)."""
    e, k = model.experts or 1, model.experts_per_token or 1
    return ep * tokens_per_rank * k / e


def imbalance(ep: int, catalog: Catalog) -> float:
    """How much more than the mean the busiest expert-parallel rank receives (1 when ep = 1)."""
    return factor(catalog, "moe_imbalance") if ep > 1 else 1.0


def training_slowdown(model: Model, ep: int, tokens_per_rank: float, catalog: Catalog) -> float:
    """Routed experts' GEMM time over what their FLOPs take at the dense rate:
    imbalance / (moe_layer_efficiency x g(m))."""
    if not is_moe(model):
        return 1.0
    g = gemm_efficiency(rows_per_expert(model, ep, tokens_per_rank), catalog)
    return imbalance(ep, catalog) / (factor(catalog, "moe_layer_efficiency") * g)


def copies_s_per_token(model: Model, hbm_gb_s: float, precision: str, catalog: Catalog) -> float:
    """GPU-seconds per token an MoE model's routed copies cost beyond their GEMMs: k copies in each
    layer, each moving `moe_copy_bytes_per_hidden` bytes per hidden unit through HBM over forward
    and backward (routing, permutation into expert order and back, dispatch buffers, the grouped
    GEMMs' launches). Proportional to k and the hidden size, not to the experts' FLOPs: fine-grained
    experts (DeepSeek-V3's 256 top-8) pay it 8 times per layer for GEMMs a seventh of Mixtral's."""
    if not is_moe(model):
        return 0.0
    k = model.experts_per_token or 1
    per_hidden = per(catalog, "moe_copy_bytes_per_hidden", precision)
    return k * model.layers * model.hidden * per_hidden / (hbm_gb_s * 1e9)


def activation_bytes_per_token(model: Model, catalog: Catalog) -> float:
    """Extra activation bytes per token per layer an MoE layer keeps over a dense MLP's: each of the
    k routed copies keeps its permuted input (h) and the expert's SwiGLU intermediates (f), in
    place of the dense MLP's share of Korthikanti's 34 (activation_mlp_bytes_per_sbh)."""
    if not is_moe(model):
        return 0.0
    k, h, f = model.experts_per_token or 1, model.hidden, model.ffn_hidden or 4 * model.hidden
    routed = k * (factor(catalog, "moe_activation_bytes_per_h") * h + factor(catalog, "moe_activation_bytes_per_f") * f)
    return routed - factor(catalog, "activation_mlp_bytes_per_sbh") * h
