"""Resolve a workload's model: a catalog name, or a model written inline in the spec."""

from __future__ import annotations

from compiler.catalog.model import Catalog, Model
from compiler.spec import InlineModel


def resolve_model(model: str | InlineModel, catalog: Catalog) -> Model | None:
    """The catalog Model for a workload's `model`; None when the name is unknown
    (validate reports unknown names; estimate then rejects rather than raising)."""
    if isinstance(model, InlineModel):
        return Model(
            name=model.name, family="llm", arch=model.arch, params_b=model.params_b,
            source="spec", active_params_b=model.active_params_b, layers=model.layers,
            hidden=model.hidden, heads=model.heads, kv_heads=model.kv_heads, vocab=model.vocab,
            ffn_hidden=model.ffn_hidden, experts=model.experts,
            experts_per_token=model.experts_per_token)
    return catalog.models.get(model)


def is_moe(model: Model) -> bool:
    return model.arch == "moe" and (model.experts or 0) > 1


def expert_params(model: Model) -> float:
    """Parameters (absolute) that live in experts and shard by expert parallelism.

    With E experts of which k are active, total = shared + E*e and active = shared + k*e,
    so e = (total - active) / (E - k)."""
    if not is_moe(model) or model.active_params_b is None:
        return 0.0
    e, k = model.experts or 1, model.experts_per_token or 1
    if e <= k:
        return 0.0
    per_expert = (model.params_b - model.active_params_b) / (e - k)
    return per_expert * e * 1e9


def active_expert_params(model: Model) -> float:
    """Parameters (absolute) of the k experts one token is routed to: k * e (expert_params' e).
    The rest of the active parameters (attention, shared experts, embeddings) run as dense GEMMs."""
    if not is_moe(model):
        return 0.0
    return expert_params(model) / (model.experts or 1) * (model.experts_per_token or 1)


def experts_hit(model: Model, tokens: float) -> float:
    """Expected distinct experts a layer reads for `tokens` routed tokens, each to k of E experts
    uniformly: E (1 - (1 - k/E)^tokens). Concave in tokens and 0 at 0 (so hits/tokens never rises)."""
    e, k = model.experts or 1, model.experts_per_token or 1
    if tokens <= 0:
        return 0.0
    return e * (1 - (1 - min(1.0, k / e)) ** tokens)
