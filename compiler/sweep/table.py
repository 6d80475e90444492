"""The sweep's table: one row per scenario, read from the plan.json each compile wrote.

    rows(outcomes) -> tuple[Row, ...]     pure: totals, each workload's cost, the fleet by GPU type
                                          and by site, the cloud share, the solver's status and gap
    to_csv(rows) / to_json(rows)          the same facts for spreadsheets and scripts (every workload)
    render_table(rows, console, base=)    rich, for people: a column per workload up to
                                          MAX_WORKLOAD_COLUMNS, past that each scenario's largest
                                          changes against the base (changes_text, base_row)

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


# Up to this many workloads the table keeps a column per workload, as it always printed: about
# as many figures as a reader compares along a row. Past it (a 51-workload sweep printed 50
# columns, squeezed to ellipses and empty cells) one column names each scenario's largest changes
# against the base. (Six columns fit 120 characters only with short names; rich shortens longer
# headers, as it always has: left as it was, so that a small sweep prints what it printed.)
MAX_WORKLOAD_COLUMNS = 6
NAMED_CHANGES = 3             # workloads named per scenario in that column; the rest are counted
BASE_NAMES = ("base", "baseline")   # a scenario of either name is the spec as it is (docs/sweep.md)
CHANGES = "largest changes vs base"
FLEET = "GPUs / by site"      # the wide table's one fleet column: by type, then by site below
# the widest the other text columns get in the wide table (they wrap); the changes column has
# the rest of the terminal, which rich would otherwise share out evenly among the wrapping columns
NARROW = {"scenario": 20, "status": 12, FLEET: 18}
CHANGES_MIN = 24              # below this the changes column is left to rich, like the others


def short_usd(value: float, signed: bool = False) -> str:
    """USD in a few characters, for a change named in a sentence: '$3.1k', '$12k', '$1.4M',
    '$420', '$0.42'; '+$3.1k' / '-$1.2k' when signed (no sign on what shows as zero)."""
    from compiler.render.environment import money

    amount = abs(value)
    if round(amount) >= 999_500:          # 999,600 is '$1.0M', not '$1000k'
        figure, unit = amount / 1e6, "M"
    elif round(amount) >= 1_000:
        figure, unit = amount / 1e3, "k"
    else:
        figure, unit = amount, ""
    if unit:
        text = f"${figure:.1f}{unit}" if figure < 9.95 else f"${figure:.0f}{unit}"
    else:
        text = money(amount)
    if not signed or round(amount, 2) == 0:
        return text
    return ("-" if value < 0 else "+") + text


def base_row(table: Sequence[Row], base: Row | None = None) -> Row | None:
    """The row every scenario is compared with: `base` when given and it has a plan (the sweep's
    own compile of the spec as it is, `_base/plan.json`), else the scenario named base or baseline,
    else the first scenario with a plan; None when no scenario has one."""
    if base is not None and base.ok:
        return base
    ok = [r for r in table if r.ok]
    for name in BASE_NAMES:
        for r in ok:
            if r.scenario == name:
                return r
    return ok[0] if ok else None


def changes(r: Row, base: Row) -> list[tuple[str, float, str]]:
    """(workload, cost change, note) for every workload whose cost differs from the base's by a
    cent or more: the largest change first, ties by name. A workload one of the two plans lacks
    (a scenario that removes it) changes by its whole cost, noted 'removed' or 'added'."""
    mine, theirs = dict(r.by_workload), dict(base.by_workload)
    out = []
    for name in sorted(set(mine) | set(theirs)):
        delta = mine.get(name, 0.0) - theirs.get(name, 0.0)
        if round(abs(delta), 2) >= 0.01:
            note = "removed" if name not in mine else "added" if name not in theirs else ""
            out.append((name, delta, note))
    out.sort(key=lambda c: (-round(abs(c[1]), 2), c[0]))
    return out


def changes_items(r: Row, base: Row | None, limit: int = NAMED_CHANGES) -> list[str]:
    """['serve-002 +$3.1k', 'train-010 -$1.2k', '+4 more']; ['base'] for the base itself,
    ['no change'], ['-'] when there is no base."""
    if base is None:
        return ["-"]
    if r is base:
        return ["base"]
    found = changes(r, base)
    if not found:
        return ["no change"]
    named = [f"{n} {short_usd(d, signed=True)}" + (f" ({note})" if note else "") for n, d, note in found[:limit]]
    more = len(found) - limit
    return named + ([f"+{more} more"] if more > 0 else [])


def changes_text(r: Row, base: Row | None, limit: int = NAMED_CHANGES) -> str:
    """'serve-002 +$3.1k, train-010 -$1.2k, +4 more'."""
    return ", ".join(changes_items(r, base, limit))


def _pack(items: Sequence[str], width: int | None) -> str:
    """The items joined by ', ', a line broken only between items (a workload's name and its
    change stay together) once a line would pass `width`; one item a line without a width."""
    lines: list[str] = []
    for k, item in enumerate(items):
        text = item + ("," if k < len(items) - 1 else "")
        if lines and width is not None and len(lines[-1]) + 1 + len(text) <= width:
            lines[-1] += " " + text
        else:
            lines.append(text)
    return "\n".join(lines)


def render_table(table: Sequence[Row], console, base: Row | None = None) -> None:
    """The scenarios for a terminal: up to MAX_WORKLOAD_COLUMNS workloads a column each, past that
    each scenario's largest changes against the base (base_row: `base` is the sweep's own compile
    of the spec as it is, where the caller has it)."""
    from rich.table import Table

    from compiler.render.environment import money, percent

    _categories, workloads, gpus, _sites = _columns(table)
    if len(workloads) > MAX_WORKLOAD_COLUMNS:
        console.print(_wide_table(table, console.width, base, len(workloads)))
        return
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


def _wide_table(table: Sequence[Row], width: int, base: Row | None, n_workloads: int):
    """One column of changes in place of the workloads', and the fleet in one column (GPUs by
    type, then by site on its own line): at 120 characters two fleet columns left the changes too
    little room. A failed scenario's whole first message is in the changes column (wrapped), its
    figures '-': the row reads as a sentence, not as empty cells. The changes column gets what
    the other columns leave of `width` (they wrap at NARROW)."""
    from rich.table import Table

    from compiler.render.environment import money, percent

    ref = base_row(table, base)
    head = ["scenario", "status", "gap", "total", "cloud", CHANGES, FLEET]
    cells, items = [], {}
    for k, r in enumerate(table):
        if r.ok:
            items[k] = changes_items(r, ref)
            cells.append([r.scenario, r.status, percent(r.gap, digits=2), money(r.total_usd),
                          percent(r.cloud_share, digits=0), ", ".join(items[k]),
                          f"{r.fleet_text or '-'}\n{r.sites_text or '-'}"])
        else:
            cells.append([r.scenario, r.status, "-", "-", "-", r.message or "no plan", "-"])
    # each column's own width (its widest cell or header, at most NARROW), its padding and rules
    others = sum(min(NARROW.get(h, width), max([len(h), *(len(line) for c in cells for line in c[k].splitlines())]))
                 for k, h in enumerate(head) if h != CHANGES) + 3 * len(head) + 1
    room: int | None = width - others
    if room < CHANGES_MIN:
        room = None
    for k, its in items.items():
        cells[k][head.index(CHANGES)] = _pack(its, room)
    t = Table(title="Scenarios", title_justify="left", caption_justify="left")
    for h in head:
        t.add_column(h, justify="right" if h in ("gap", "total", "cloud") else "left", overflow="fold",
                     max_width=NARROW.get(h), width=room if h == CHANGES else None)
    for c in cells:
        t.add_row(*c)
    if ref is None:
        t.caption = "No scenario has a plan; each row says why."
    else:
        which = "the spec as it is" if ref is base else f"scenario '{ref.scenario}'"
        t.caption = (f"{n_workloads} workloads: each scenario's largest changes in cost are against {which}. "
                     "scenarios.csv and scenarios.json have every workload's cost.")
    return t
