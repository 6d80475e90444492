"""Optimizer benchmark: CBC and HiGHS time and gap on generated platforms of 10-200 workloads.

    python benchmarks/bench_optimize.py [--sizes 10 50 100 200] [--gap 0.005] [--time-limit 60]

Prints one row per (size, solver): variables, constraints, status, seconds, gap, and how the
time grows from the previous size; then a Markdown table (one row per size, both solvers) for
docs/optimizer.md, with the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generate import generate  # noqa: E402

from compiler.optimize.formulate import formulate  # noqa: E402
from compiler.optimize.solve import solve  # noqa: E402
from compiler.optimize.start import greedy_start  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 200])
    ap.add_argument("--solvers", nargs="+", default=["cbc", "highs"])
    ap.add_argument("--gap", type=float, default=0.005)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{'N':>4} {'solver':>6} {'vars':>7} {'cons':>7} {'formulate_s':>11} {'status':>9} "
          f"{'solve_s':>8} {'gap':>8} {'objective_usd':>15} {'growth':>7}")
    last: dict[str, float] = {}
    rows: list[str] = []
    for n in args.sizes:
        cands = generate(n, args.seed)
        t0 = time.perf_counter()
        problem = formulate(cands)
        tf = time.perf_counter() - t0
        cells = []
        for solver in args.solvers:
            # As `infra-compile` does: CBC starts from the greedy plan (start.py), HiGHS from none.
            start = greedy_start(problem) if solver == "cbc" else None
            sol = solve(problem, solver=solver, time_limit=args.time_limit, gap=args.gap, start=start)
            cells.append(f"{sol.status}, {sol.seconds:.1f} s, gap {sol.gap:.2%}" if sol.has_solution
                         else f"{sol.status}, {sol.seconds:.1f} s")
            growth = f"{sol.seconds / last[solver]:.1f}x" if solver in last and last[solver] > 0 else "-"
            last[solver] = sol.seconds
            print(f"{n:>4} {solver:>6} {len(problem.variables):>7} {len(problem.constraints):>7} {tf:>11.2f} "
                  f"{sol.status:>9} {sol.seconds:>8.2f} {sol.gap:>8.4f} {sol.objective:>15,.0f} {growth:>7}",
                  flush=True)
        rows.append(f"| {n} | {len(problem.variables):,} | {len(problem.constraints):,} | " + " | ".join(cells) + " |")
    print(f"\n{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"gap {args.gap:g}, limit {args.time_limit:g} s, seed {args.seed}\n")
    print("| N | vars | constraints | " + " | ".join(s.upper() if s == "cbc" else "HiGHS" for s in args.solvers) + " |")
    print("|--:|-----:|------------:|" + "|".join("-----" for _ in args.solvers) + "|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
