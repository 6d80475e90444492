"""The one-screen summary printed at the end of a compile (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from compiler.plan import Plan
from compiler.render.environment import money, percent
from compiler.report.views import build


def print_summary(plan: Plan, console: Console, seconds: float | None = None,
                  solving: float | None = None) -> None:
    """`seconds`: the whole compile's wall time (estimate, every solve, render); `solving`: all of
    its solves' (the plan without the operability limits and the limits' pricing included). Both
    are said beside the plan's own search, which is only the last solve's."""
    view = build(plan)
    s = view.solver
    search = f"the plan's search {s.seconds:.1f} s"
    parts = ([f"solving {solving:.1f} s"] if solving is not None else []) + [search]
    took = (f"compiled in {seconds:.1f} s ({', of which '.join(parts)})" if seconds is not None else search)
    console.print(
        f"[bold]{view.spec_name}[/bold]: total [bold]{money(view.total_cost_usd)}[/bold] over "
        f"{view.horizon_months} months ({money(view.monthly_average_usd)} a month); solver {s.name} "
        f"{s.status}, gap {percent(s.gap, 2)}; {took}")

    costs = Table(title="Cost", title_justify="left", box=None, pad_edge=False)
    costs.add_column("category")
    costs.add_column("USD", justify="right")
    costs.add_column("share", justify="right")
    for row in view.by_category:
        costs.add_row(row.label, money(row.usd), percent(row.share))

    pools = Table(title="Pools", title_justify="left", box=None, pad_edge=False)
    for col in ("site", "instance", "GPU", "nodes", "GPUs", "pricing"):
        pools.add_column(col, justify="right" if col in ("nodes", "GPUs") else "left")
    for site in view.sites:
        for p in site.pools:
            pools.add_row(site.name, p.instance, p.gpu, str(p.nodes), str(p.gpus), p.pricing)

    work = Table(title="Workloads", title_justify="left", box=None, pad_edge=False)
    for col in ("workload", "kind", "GPU", "GPUs", "site", "duration / capacity", "cost"):
        work.add_column(col, justify="right" if col in ("GPUs", "cost") else "left")
    for g in view.workload_groups:     # repeats of one job fold into one row
        w = g.first
        work.add_row(g.label, w.kind, w.gpu, str(w.gpus), g.sites,
                     g.months_phrase if g.folded else w.headline, money(g.cost_usd))

    grid = Table.grid(padding=(0, 4))
    grid.add_row(costs, pools)
    console.print(grid)
    console.print(work)
    if not s.optimal:
        # a default compile stops too (its node budget, its stall, past its proof of 1%): the
        # options move where it stops, they are not always why it stopped
        console.print(f"[yellow]note:[/yellow] the solver stopped at '{s.status}' before proving the optimum "
                      f"(--max-nodes, --time-limit or --gap move where it stops); a plan up to "
                      f"{percent(s.gap, 2)} cheaper may exist.")
        if s.gap_note:
            console.print(f"      {s.gap_note}.")
        if s.name == "cbc" and s.searched:
            # HiGHS's search closes more of the gap on large platforms; not said where no search
            # ran: the rounds and windows run on HiGHS whatever --solver says
            console.print("      --solver highs usually gets closer on platforms this large.")
    if view.operability is not None and view.operability.cost:
        console.print(f"[bold]operability limits:[/bold] {view.operability.cost}")
