"""The example sweep's wall time on one process, two local workers and a local Dask cluster.

    python benchmarks/bench_sweep.py [--spec examples/hybrid-llm-platform.yaml]
                                     [--scenarios examples/scenarios/hybrid-llm-platform.yaml]

Runs `infra-compile sweep` three times as a user would (one process; `--workers 2`; a Dask
scheduler and one worker process of two single-threaded workers, `--scheduler`), prints each wall
time and whether the three output folders hold the same files byte for byte (plan.json's solver
seconds aside: the one figure that is a measurement). Results: benchmarks/README.md, "Sweeps".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def files(root: Path) -> dict[str, str]:
    """Every file under `root` by relative path; plan.json with the solver's wall seconds taken
    out, the one figure that differs between two runs of a compile (as --check compares them)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            text = p.read_text(encoding="utf-8")
            if p.name == "plan.json":
                doc = json.loads(text)
                doc["solver"].pop("seconds")
                text = json.dumps(doc, sort_keys=True)
            out[str(p.relative_to(root))] = text
    return out


def sweep(spec: Path, scenarios: Path, out: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "compiler", "sweep", str(spec), str(scenarios), "-o", str(out),
                    "-q", *extra], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(ROOT / "examples" / "hybrid-llm-platform.yaml"))
    ap.add_argument("--scenarios", default=str(ROOT / "examples" / "scenarios" / "hybrid-llm-platform.yaml"))
    args = ap.parse_args()
    spec, scenarios = Path(args.spec), Path(args.scenarios)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        one = sweep(spec, scenarios, tmp / "one", "--workers", "1")
        print(f"one process:     {one:6.1f} s", flush=True)
        two = sweep(spec, scenarios, tmp / "two", "--workers", "2")
        print(f"two workers:     {two:6.1f} s", flush=True)
        bindir = Path(sys.executable).parent
        sched = tmp / "scheduler.json"
        procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--scheduler-file", str(sched), "--host",
                                   "127.0.0.1", "--port", "0", "--no-dashboard"], start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        try:
            while not sched.exists():
                time.sleep(0.2)
            procs.append(subprocess.Popen([str(bindir / "dask"), "worker", "--scheduler-file", str(sched),
                                           "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                                          start_new_session=True, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            from distributed import Client

            address = json.loads(sched.read_text())["address"]
            with Client(address) as client:
                client.wait_for_workers(2)
            dask = sweep(spec, scenarios, tmp / "dask", "--scheduler", address)
            print(f"Dask, 2 workers: {dask:6.1f} s", flush=True)
        finally:
            for p in procs:
                os.killpg(p.pid, signal.SIGTERM)
        a, b, c = files(tmp / "one"), files(tmp / "two"), files(tmp / "dask")
        rows = json.loads((tmp / "one" / "scenarios.json").read_text())["scenarios"]
        print(f"{len(rows)} scenarios, {len(a)} files; the same bytes on all three: {a == b == c}")
        for r in rows:
            total = "-" if r["total_cost_usd"] is None else f"${r['total_cost_usd']:,.0f}"
            gap = "" if r["gap"] is None else f"{r['gap'] * 100:.2f}%"
            print(f"  {r['scenario']:<16} {r['status']:<11} {gap:>6} {total:>12}")


if __name__ == "__main__":
    main()
