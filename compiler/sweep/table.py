"""The sweep's table: one row per scenario, read from the plan.json each compile wrote.

    rows(outcomes) -> tuple[Row, ...]     pure: totals, each workload's cost, the fleet by GPU type
                                          and by site, the cloud share, the solver's status and gap
    to_csv(rows) / to_json(rows)          the same facts for spreadsheets and scripts
    render_table(rows, console)           rich, for people

A failed scenario keeps its row: its status says why (invalid, infeasible, no plan) and its
figures are empty. Every figure comes from the scenario's plan.json, so the table never says
what the plan files do not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from compiler.sweep.run import Outcome

FAILED = {2: "invalid", 3: "infeasible", 5: "no plan", 6: "audit failed"}


@dataclass(frozen=True)
class Row:
    scenario: str
    status: str                          # optimal | feasible | invalid | infeasible | no plan ...
    gap: float | None                    # proven relative gap
    total_usd: float | None
    by_category: tuple[tuple[str, float], ...]
    by_workload: tuple[tuple[str, float], ...]
    gpus_by_type: tuple[tuple[str, int], ...]      # GPUs in the plan's pools (nodes x GPUs per node)
    gpus_by_site: tuple[tuple[str, int], ...]
    cloud_share: float | None            # cloud compute and cloud storage over the total
    swept: str = ""                      # the ranged parameter, e.g. "prices[0].factor"
    point: float | None = None
    message: str = ""                    # a failed scenario's first diagnostic

    @property
    def ok(self) -> bool:
        return self.total_usd is not None

    @property
    def fleet_text(self) -> str:
        """GPUs by type: '8 H100, 8 L40S'."""
        return ", ".join(f"{n} {g}" for g, n in self.gpus_by_type)

    @property
    def sites_text(self) -> str:
        """GPUs by site: 'aws-use1 8, lab-dc1 9'."""
        return ", ".join(f"{site} {n}" for site, n in self.gpus_by_site)


def row(outcome: Outcome, swept: str = "", point: float | None = None) -> Row:
    if not outcome.ok:
        first = outcome.messages.strip().splitlines()[0] if outcome.messages.strip() else ""
        return Row(outcome.name, FAILED.get(outcome.exit_code, f"exit {outcome.exit_code}"), None, None,
                   (), (), (), (), None, swept, point, first)
    plan = json.loads(outcome.artifacts["plan.json"])
    kinds = {s["name"]: s["type"] for s in plan["sites"]}
    by_type: dict[str, int] = {}
    by_site: dict[str, int] = {}
    for p in plan["pools"]:
        gpus = p["nodes"] * p["gpus_per_node"]
        by_type[p["gpu"]] = by_type.get(p["gpu"], 0) + gpus
        by_site[p["site"]] = by_site.get(p["site"], 0) + gpus
    total = plan["total_cost_usd"]
    cloud = plan["cost_breakdown_usd"].get("cloud_compute", 0.0) + sum(
        s["cost_usd"] for s in plan.get("storage", []) if kinds.get(s["site"]) == "cloud")
    solver = plan["solver"]
    return Row(outcome.name, solver["status"], solver["gap"], total,
               tuple(sorted(plan["cost_breakdown_usd"].items())),
               tuple(sorted((w["name"], w["cost_usd"]) for w in plan["workloads"])),
               tuple(sorted(by_type.items())), tuple(sorted(by_site.items())),
               cloud / total if total else 0.0, swept, point)


def rows(outcomes: Sequence[Outcome], scenarios: Sequence[Any]) -> tuple[Row, ...]:
    """One row per outcome, with its scenario's swept parameter (scenarios in the same order)."""
    return tuple(row(o, s.swept, s.point) for o, s in zip(outcomes, scenarios))


def _columns(table: Sequence[Row]) -> tuple[list[str], list[str], list[str], list[str]]:
    workloads = sorted({n for r in table for n, _ in r.by_workload})
    categories = sorted({n for r in table for n, _ in r.by_category})
    gpus = sorted({n for r in table for n, _ in r.gpus_by_type})
    sites = sorted({n for r in table for n, _ in r.gpus_by_site})
    return categories, workloads, gpus, sites


def to_json(table: Sequence[Row]) -> list[dict[str, Any]]:
    def r2(v):
        return None if v is None else round(v, 2)

    return [{
        "scenario": r.scenario, "status": r.status,
        "gap": None if r.gap is None else round(r.gap, 6),
        "total_cost_usd": r2(r.total_usd),
        "cost_by_category_usd": {k: r2(v) for k, v in r.by_category},
        "cost_by_workload_usd": {k: r2(v) for k, v in r.by_workload},
        "gpus_by_type": dict(r.gpus_by_type), "gpus_by_site": dict(r.gpus_by_site),
        "cloud_share": None if r.cloud_share is None else round(r.cloud_share, 6),
        "swept": r.swept or None, "point": r.point, "message": r.message or None,
    } for r in table]


def to_csv(table: Sequence[Row]) -> str:
    """RFC 4180, one row per scenario; the columns are the union over the plans."""
    from compiler.render.environment import csv_field

    categories, workloads, gpus, sites = _columns(table)
    head = (["scenario", "status", "gap", "total_cost_usd", "cloud_share", "swept", "point"]
            + [f"cost:{c}" for c in categories] + [f"workload:{w}" for w in workloads]
            + [f"gpus:{g}" for g in gpus] + [f"site_gpus:{s}" for s in sites] + ["message"])
    lines = [",".join(csv_field(h) for h in head)]
    for r in table:
        cat, wl, gp, st = dict(r.by_category), dict(r.by_workload), dict(r.gpus_by_type), dict(r.gpus_by_site)

        def num(v, digits=2):
            return "" if v is None else f"{v:.{digits}f}"

        cells = ([r.scenario, r.status, num(r.gap, 6), num(r.total_usd), num(r.cloud_share, 6), r.swept,
                  "" if r.point is None else f"{r.point:g}"]
                 + [num(cat.get(c)) for c in categories] + [num(wl.get(w)) for w in workloads]
                 + [str(gp.get(g, 0)) if r.ok else "" for g in gpus]
                 + [str(st.get(s, 0)) if r.ok else "" for s in sites] + [r.message])
        lines.append(",".join(csv_field(c) if isinstance(c, str) else c for c in cells))
    return "\r\n".join(lines) + "\r\n"


def render_table(table: Sequence[Row], console) -> None:
    from rich.table import Table

    from compiler.render.environment import money, percent

    _categories, workloads, gpus, _sites = _columns(table)
    t = Table(title="Scenarios", title_justify="left")
    for col in ["scenario", "status", "gap", "total", "cloud"] + workloads + ["GPUs", "by site"]:
        t.add_column(col, justify="left" if col in ("scenario", "status", "GPUs", "by site") else "right")
    for r in table:
        if not r.ok:
            t.add_row(r.scenario, r.status, "", "", "", *[""] * len(workloads), r.message[:60], "")
            continue
        wl = dict(r.by_workload)
        t.add_row(r.scenario, r.status, percent(r.gap, digits=2), money(r.total_usd),
                  percent(r.cloud_share, digits=0), *[money(wl[w]) if w in wl else "-" for w in workloads],
                  r.fleet_text or "-", r.sites_text or "-")
    console.print(t)
