"""`infra-compile estimate`: the candidates considered per workload, as rich tables or JSON.

Costs here are indicative only (catalog price x hours for the candidate's own site and
pricing); the optimizer decides the real mix of on-demand, spot, reserved and owned.
"""

from __future__ import annotations

from typing import Any

from compiler.candidates import Candidate, Candidates, InferenceEstimate
from compiler.estimate.layout import describe
from compiler.estimate.options import Hardware, hardware_options


def _prices(cands: Candidates, workload) -> dict[tuple[str, str], Hardware]:
    return {(h.site, h.label): h for h in hardware_options(cands.spec, workload, cands.catalog)}


def _label(c: Candidate) -> str:
    return c.instance if c.site_type == "cloud" else f"{c.instance}+{c.fabric}"


def indicative_cost(c: Candidate, hw: Hardware | None) -> float | None:
    """Training: USD for the whole run. Inference: USD per replica-hour."""
    if hw is None:
        return None
    rate = hw.spot_usd_h if c.spot else hw.on_demand_usd_h
    if rate is None:
        return None
    if c.kind == "training":
        return rate * c.nodes * c.estimate.duration_hours
    return rate * c.gpus / c.gpus_per_node


def _row(c: Candidate, hw: Hardware | None) -> dict[str, Any]:
    e = c.estimate
    row: dict[str, Any] = {
        "id": c.id, "site": c.site, "instance": c.instance, "gpu": c.gpu, "gpus": c.gpus, "nodes": c.nodes,
        "fabric": c.fabric, "spot": c.spot, "layout": describe(c.layout),
        "memory_gb_per_gpu": e.memory_gb_per_gpu, "notes": list(e.notes),
    }
    cost = indicative_cost(c, hw)
    if isinstance(e, InferenceEstimate) and e.vision:
        # a vision service: images/s a replica (one GPU) at the batch whose latency meets the bound
        row.update(images_per_s=e.tokens_per_s, latency_ms=e.latency_ms, batch=e.batch,
                   usd_per_replica_hour=None if cost is None else round(cost, 4),
                   usd_per_million_images=None if cost is None else round(cost / (e.tokens_per_s * 3600) * 1e6, 4))
    elif isinstance(e, InferenceEstimate):
        row.update(tokens_per_s=e.tokens_per_s, ttft_ms=e.ttft_ms, tpot_ms=e.tpot_ms, batch=e.batch,
                   usd_per_replica_hour=None if cost is None else round(cost, 4),
                   usd_per_million_tokens=None if cost is None else round(cost / (e.tokens_per_s * 3600) * 1e6, 4))
        if e.disaggregation is not None:     # colocated rows keep their keys as before
            g = e.disaggregation
            row["disaggregation"] = {"prefill_tp": g.prefill_tp, "prefill_instances": g.prefill_instances,
                                     "decode_tp": g.decode_tp, "decode_instances": g.decode_instances}
    else:
        row.update(duration_hours=e.duration_hours, mfu=e.mfu, tokens_per_s=e.tokens_per_s,
                   samples_per_s=e.samples_per_s, usage=[[m, h] for m, h in c.usage],
                   start_month=c.start_month, usd_indicative=None if cost is None else round(cost, 2),
                   step_breakdown=dict(e.step_breakdown))
    return row


def to_json(candidates: Candidates) -> dict[str, Any]:
    """Deterministic: workloads in spec order, candidates by id, rejections sorted."""
    out = []
    for w in candidates.spec.workloads:
        hws = _prices(candidates, w)
        cands = candidates.by_workload.get(w.name, ())
        out.append({
            "name": w.name, "kind": w.kind,
            "candidates": [_row(c, hws.get((c.site, _label(c)))) for c in cands],
            "rejected": [{"site": r.site, "instance": r.label, "gpu": r.gpu, "gpus": r.gpus, "reason": r.reason}
                         for r in candidates.rejected.get(w.name, ())],
        })
    return {"spec": candidates.spec.name, "catalog": candidates.catalog.version, "workloads": out}


def _duration(hours: float) -> str:
    return f"{hours / 24:.1f} d" if hours >= 48 else f"{hours:.1f} h"


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def render_table(candidates: Candidates, console) -> None:
    from rich.table import Table

    data = to_json(candidates)
    for w in data["workloads"]:
        training = w["kind"] == "training"
        vision = not training and any("images_per_s" in r for r in w["candidates"])
        t = Table(title=f"{w['name']} ({w['kind']}): {len(w['candidates'])} candidates, "
                        f"{len(w['rejected'])} rejected", title_justify="left")
        for col in ("site", "instance", "GPU", "GPUs", "layout", "mem GB/GPU"):
            t.add_column(col, justify="right" if col in ("GPUs", "mem GB/GPU") else "left")
        if training:
            for col in ("pricing", "duration", "MFU", "tokens|samples/s", "cost (indicative)"):
                t.add_column(col, justify="left" if col == "pricing" else "right")
        elif vision:
            for col in ("batch", "img/s/replica", "latency ms", "$/replica-h", "$/M images"):
                t.add_column(col, justify="right")
        else:
            for col in ("batch", "tok/s/replica", "TTFT p99 ms", "TPOT p99 ms", "$/replica-h", "$/Mtok"):
                t.add_column(col, justify="right")
        for r in sorted(w["candidates"], key=lambda r: (r["site"], r["id"].split("/")[2], r["spot"], r["gpus"])):
            head = [r["site"], r["id"].split("/")[2], r["gpu"], str(r["gpus"]), r["layout"], f"{r['memory_gb_per_gpu']:.1f}"]
            if training:
                rate = r["tokens_per_s"] if r["tokens_per_s"] is not None else r["samples_per_s"]
                t.add_row(*head, "spot" if r["spot"] else "on-demand", _duration(r["duration_hours"]),
                          f"{r['mfu']:.1%}", f"{rate:,.0f}", _money(r["usd_indicative"]))
            elif vision:
                t.add_row(*head, str(r["batch"]), f"{r['images_per_s']:,.0f}", f"{r['latency_ms']:.1f}",
                          _money(r["usd_per_replica_hour"]),
                          "-" if r["usd_per_million_images"] is None else f"${r['usd_per_million_images']:.2f}")
            else:
                t.add_row(*head, str(r["batch"]), f"{r['tokens_per_s']:,.0f}", f"{r['ttft_ms']:,.0f}",
                          f"{r['tpot_ms']:.1f}", _money(r["usd_per_replica_hour"]),
                          "-" if r["usd_per_million_tokens"] is None else f"${r['usd_per_million_tokens']:.2f}")
        console.print(t)
        if w["rejected"]:
            rt = Table(title=f"{w['name']}: rejected", title_justify="left")
            for col in ("site", "instance", "GPU", "GPUs", "reason"):
                rt.add_column(col)
            for r in w["rejected"]:
                rt.add_row(r["site"], r["instance"], r["gpu"], str(r["gpus"] or ""), r["reason"])
            console.print(rt)
