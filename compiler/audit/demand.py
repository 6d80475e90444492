"""Services carry their demand every month, and survive the loss of a site when they must."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, num
from compiler.spec import InferenceWorkload

TOL = 1e-9      # relative: tokens/s figures are rounded to 3 decimals in the estimate


def _services(ctx: Context):
    """(spec workload, plan workload, resolved placements) for services whose every placement
    resolved (others are reported by the placement checks, and their demand cannot be judged)."""
    for w in ctx.spec.workloads:
        if not isinstance(w, InferenceWorkload):
            continue
        mine = [pl for pl in ctx.placed if pl.workload is w]
        wps = [wp for wp in ctx.plan.workloads if wp.name == w.name]
        if not wps or not wps[0].placements or len(mine) != len(wps[0].placements):
            continue
        yield w, wps[0], mine


def _short(have: float, need: float) -> bool:
    return have < need * (1 - TOL) - 1e-6


def _shortfalls(ctx: Context, w, mine, lost: str | None = None) -> list[tuple[int, float, float]]:
    """(month, tokens/s needed, tokens/s carried) for each month from window.start_month that the
    placements, less those at site `lost`, carry short."""
    short = []
    for m in range(w.window.start_month, ctx.H):
        need = rules.demand(w, m)
        have = sum(ctx.replicas(pl.placement, m) * pl.cand.estimate.tokens_per_s
                   for pl in mine if pl.cand.site != lost)
        if _short(have, need):
            short.append((m, need, have))
    return short


def check_demand(ctx: Context) -> Iterator[Finding]:
    """peak_rps * output_tokens * (1+growth)^(m-start) output tokens/s carried in every month from
    window.start_month by sum(replicas * tokens/s per replica)."""
    for w, _wp, mine in _services(ctx):
        short = _shortfalls(ctx, w, mine)
        if short:
            m, need, have = short[0]
            more = f" (and {len(short) - 1} more months short)" if len(short) > 1 else ""
            yield Finding(codes.SERVICE_SHORT,
                          f"{w.name} must carry {num(need)} output tokens/s in month {m}, its replicas "
                          f"carry {num(have)}{more}", f"{w.path}.traffic")


def check_site_loss(ctx: Context) -> Iterator[Finding]:
    """slo.availability >= 0.999: the demand is carried again without any one site."""
    for w, _wp, mine in _services(ctx):
        if w.slo.availability < 0.999:
            continue
        for lost in sorted({pl.cand.site for pl in mine}):
            short = _shortfalls(ctx, w, mine, lost)
            if short:
                m, need, have = short[0]
                more = f" (and {len(short) - 1} more months)" if len(short) > 1 else ""
                yield Finding(codes.SITE_LOSS,
                              f"{w.name} must carry {num(need)} output tokens/s in month {m} without {lost} "
                              f"(slo.availability {w.slo.availability:g}), the other sites carry "
                              f"{num(have)}{more}", f"{w.path}.slo.availability")


def check_replica_series(ctx: Context) -> Iterator[Finding]:
    """monthly_replicas: one entry per month, none before the window, peaks stated right."""
    for w, wp, mine in _services(ctx):
        tot_reps = [0] * ctx.H
        tot_gpus = [0] * ctx.H
        for pl in mine:
            p, c = pl.placement, pl.cand
            where = f"{w.name} at {p.site}/{p.instance}"
            if len(p.monthly_replicas) != ctx.H:
                yield Finding(codes.REPLICA_SERIES, f"{where} gives replicas for {len(p.monthly_replicas)} "
                              f"months, the horizon has {ctx.H}", w.path)
                continue
            early = [m for m in range(min(w.window.start_month, ctx.H)) if p.monthly_replicas[m]]
            if early:
                yield Finding(codes.REPLICA_SERIES, f"{where} runs {p.monthly_replicas[early[0]]} replicas in "
                              f"month {early[0]}, before the service starts in month {w.window.start_month}",
                              f"{w.path}.window")
            if any(r < 0 for r in p.monthly_replicas):
                yield Finding(codes.REPLICA_SERIES, f"{where} has a negative replica count", w.path)
            peak = max(p.monthly_replicas, default=0)
            nodes = max((rules.whole_nodes(r * c.gpus, c.gpus_per_node) for r in p.monthly_replicas), default=0)
            if (p.replicas, p.gpus, p.nodes) != (peak, peak * c.gpus, nodes):
                yield Finding(codes.REPLICA_SERIES,
                              f"{where} states {p.replicas} replicas on {p.gpus} GPUs ({p.nodes} nodes) at peak, "
                              f"its months peak at {peak} replicas on {peak * c.gpus} GPUs ({nodes} nodes)",
                              w.path)
            for m in range(ctx.H):
                tot_reps[m] += p.monthly_replicas[m]
                tot_gpus[m] += p.monthly_replicas[m] * c.gpus
        if wp.replicas != max(tot_reps, default=0) or wp.gpus != max(tot_gpus, default=0):
            yield Finding(codes.REPLICA_SERIES,
                          f"{w.name} states {wp.replicas} replicas on {wp.gpus} GPUs at once, its placements "
                          f"peak at {max(tot_reps, default=0)} replicas on {max(tot_gpus, default=0)} GPUs",
                          w.path)
