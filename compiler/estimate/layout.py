"""Parallel layouts: every (tp, pp, dp, ep, cp, zero) worth trying for a GPU count.

Tensor parallel stays inside a node (NVLink); pipeline stages are powers of two up to the
layer count; context parallel only for long sequences; expert parallel only for MoE, folded
over the tensor-, context- and data-parallel ranks (experts whole on each rank: expert tensor parallel 1); ZeRO 1/2/3 when there is data parallelism to shard over.
The caller picks the fastest layout that fits memory (for a fixed GPU count, fastest
is cheapest).
"""

from __future__ import annotations

from typing import Iterator

from compiler.candidates import Layout
from compiler.catalog.model import Model
from compiler.estimate.models import is_moe

POWERS = (1, 2, 4, 8, 16, 32, 64)
EP_DEGREES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def training_layouts(model: Model, gpus: int, gpus_per_node: int, seq_len: int,
                     cp_min_seq: int) -> Iterator[Layout]:
    inner = inner_degrees(model, gpus_per_node, seq_len, cp_min_seq)
    for tp, pp, dp, ep, cp, zero in training_degrees(model, gpus, inner):
        yield Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, zero=zero)


def inner_degrees(model: Model, gpus_per_node: int, seq_len: int,
                  cp_min_seq: int) -> tuple[tuple[int, int, int], ...]:
    """Every (tp, pp, cp) training_layouts may try, in its order; which of them a GPU count
    admits depends on the count (training_degrees)."""
    heads = model.heads or 1
    tps = [t for t in (1, 2, 4, 8) if t <= gpus_per_node and gpus_per_node % t == 0 and heads % t == 0]
    pps = [p for p in POWERS if p <= (model.layers or 1)]
    cps = [c for c in (1, 2, 4, 8, 16) if c == 1 or seq_len >= cp_min_seq * c // 2]
    return tuple((tp, pp, cp) for tp in tps for pp in pps for cp in cps)


def training_degrees(model: Model, gpus: int,
                     inner: tuple[tuple[int, int, int], ...]) -> Iterator[tuple[int, int, int, int, int, int]]:
    """training_layouts' layouts on `gpus` as (tp, pp, dp, ep, cp, zero), in the same order, from
    inner_degrees' (tp, pp, cp): the layout search reads many more layouts than it keeps, and
    builds a Layout only for those."""
    moe, experts = is_moe(model), model.experts or 1
    for tp, pp, cp in inner:
        n = tp * pp * cp
        if gpus % n:
            continue
        dp = gpus // n
        # Expert parallelism folds over the tensor-, context- and data-parallel ranks (Megatron-Core's
        # MoE parallel folding with expert tensor parallel 1): ep divides tp x cp x dp and the
        # expert count.
        fold = tp * cp * dp
        eps = [e for e in EP_DEGREES if e <= fold and fold % e == 0 and experts % e == 0] if moe else (1,)
        for ep in eps:
            for zero in ((1, 2, 3) if dp > 1 else (0,)):
                yield tp, pp, dp, ep, cp, zero


def inference_tps(gpus_per_node: int) -> list[int]:
    """One replica stays inside a node: t in {1,2,4,8}, t <= GPUs per node."""
    return [t for t in (1, 2, 4, 8) if t <= gpus_per_node]


def describe(layout: Layout) -> str:
    parts = [f"tp{layout.tp}", f"pp{layout.pp}", f"dp{layout.dp}"]
    if layout.ep > 1:
        parts.append(f"ep{layout.ep}")
    if layout.cp > 1:
        parts.append(f"cp{layout.cp}")
    if layout.zero:
        parts.append(f"z{layout.zero}")
    return " ".join(parts)
