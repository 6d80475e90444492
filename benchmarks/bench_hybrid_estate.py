"""Hybrid-estate benchmark: a team's N-workload hybrid platform, limits on and lifted, re-planned.

    python benchmarks/bench_hybrid_estate.py [--workloads 50] [--seed 0] [--timeout 1800]
                                             [--keep DIR] [--only a b c d] [--specs-only]

Builds hybrid_spec(N, seed): a hybrid platform stated as a platform team states theirs, modelled
on a real US/APAC estate: a calendar `start` (2027-04), 18 months, four cloud regions (AWS
us-east-2 with four p5.48xlarge held on a 1-year term until 2027-10, AWS Tokyo, GCP us-central1,
Azure eastus), and a data centre in Oregon with owned DGX H100 nodes bought 2024-10 (8 per 20
workloads, rounded up; the power and racks grow with them). About 40% of the workloads are
services (chat and assistant services on Llama 3 70B and 8B and Qwen2.5 32B, code services with
long prompts, embedding services of one output token; 1-5% growth a month, a third at 99.9%
availability, some launched mid-horizon), the rest training: recurring jobs (a weekly 8B fine-tune
of 3 days, monthly 70B evaluations of 5 days, quarterly 8B refreshes), one-time 8B and 70B
fine-tunes, continued pretraining of a 70B and pretraining of an 8B model. Same N and seed -> same
spec. Then it runs four compiles, each a separate `infra-compile compile SPEC -o DIR --format
json` process under /usr/bin/time (wall seconds, peak RSS), and reads each DIR/plan.json:

  a) the spec as written: the three operability limits on by default (max_sites_per_service 3,
     max_gpu_types_per_service 2, min_pool_months 3), so the compile also prices them (solves
     again without them for the report's Operability section);
  b) the same spec with those three lifted: `policy: {max_sites_per_service: null,
     max_gpu_types_per_service: null, min_pool_months: null}` (the other three operability keys,
     max_instance_types_per_site, min_months_per_mix and max_spot_share, are off by default);
  c) three ordinary edits re-planned a month later with `--baseline` a's plan.json: the spec's
     `start` moves a month (2027-05), the horizon stays 18 months (so it ends a month later), every
     workload keeps its calendar dates (window start months one less; none of the one-time jobs
     starts in the first month, so none has run yet) and each running service's `peak_rps` is its
     forecast for the new first month (x (1 + growth)); then the first service's traffic +50%, the
     first one-time job whose window allows it moved two months later, and a 70B fine-tune added;
  d) the spec of c) compiled from scratch (no baseline).

It prints each compile's status, total, bound, gap, the plan's solver.strategy path, wall seconds
and peak RSS, and the three ratios the hybrid estate's targets ask for: a/b seconds (at most 2),
c/d seconds (at most 1) and c's gap against d's (no wider). A compile that runs past `--timeout`
is killed and reported "not done after X s". Each compile's progress lines (its stderr, written as
on a terminal: TTY_COMPATIBLE=1), each with its seconds since the start, are kept in the work
directory (`--keep DIR`, else a temporary one) as a.log ... d.log, beside the specs and plans.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import yaml

START, HORIZON = "2027-04", 18
SITES = [
    {"name": "aws-use2", "type": "cloud", "provider": "aws", "region": "us-east-2",
     "pricing": ["on_demand", "spot", "reserved_1y", "reserved_3y"],
     "reserved": [{"instance": "p5.48xlarge", "nodes": 4, "until": "2027-10", "term": "reserved_1y"}]},
    {"name": "aws-tokyo", "type": "cloud", "provider": "aws", "region": "ap-northeast-1",
     "pricing": ["on_demand", "reserved_1y"]},
    {"name": "gcp-usc1", "type": "cloud", "provider": "gcp", "region": "us-central1",
     "pricing": ["on_demand", "spot", "reserved_1y"]},
    {"name": "az-eus", "type": "cloud", "provider": "azure", "region": "eastus",
     "pricing": ["on_demand", "reserved_1y"]},
]
SLO = {"ttft_p99_ms": 2000, "tpot_p99_ms": 60}
# services: (name stem, model, quantization, peak rps choices, input tokens, output tokens)
SERVICES = [
    ("chat-70b", "llama-3-70b", "fp8", [6, 10, 15, 25], 1200, 300),
    ("assistant-8b", "llama-3-8b", "fp8", [20, 40, 60], 800, 200),
    ("code-70b", "llama-3-70b", "fp8", [4, 8], 3000, 400),
    ("chat-32b", "qwen2.5-32b", "fp8", [10, 20], 1000, 250),
    ("embed-8b", "llama-3-8b", "int4", [80, 120, 200], 512, 1),
    ("search-8b", "llama-3-8b", "int4", [60, 120], 400, 80),
    ("agents-70b", "llama-3-70b", "fp8", [3, 6], 6000, 500),
]
LIFTED = {"max_sites_per_service": None, "max_gpu_types_per_service": None, "min_pool_months": None}


def hybrid_spec(n: int, seed: int = 0) -> dict:
    """A valid hybrid spec (plain data) of n workloads; same arguments -> same spec."""
    rng = random.Random(seed)
    groups = math.ceil(n / 20)
    dc = {"name": "dc-oregon", "type": "on_prem", "power_kw": 700 * groups, "electricity_usd_per_kwh": 0.07,
          "pue": 1.25, "max_racks": 24 * groups,
          "owned": [{"instance": "dgx-h100", "nodes": 8 * groups, "bought": "2024-10"}]}
    n_services = max(1, round(0.4 * n))
    n_recurring = max(1, round(0.1 * n))
    workloads = []
    for k in range(n_services):
        stem, model, quant, rps, tin, tout = SERVICES[k % len(SERVICES)]
        w = {"name": f"{stem}-{k:02d}", "kind": "inference", "model": model, "quantization": quant,
             "traffic": {"peak_rps": rng.choice(rps), "input_tokens": tin, "output_tokens": tout,
                         "growth_per_month": rng.choice([0.01, 0.02, 0.03, 0.05])},
             "slo": {**SLO, "availability": 0.999 if k % 3 == 0 else 0.99}}
        if k >= 3 and rng.random() < 0.25:        # a service launched later in the horizon
            w["window"] = {"start_month": rng.randrange(2, 10)}
        workloads.append(w)
    recurring = [
        ("ft-weekly", {"model": "llama-3-8b", "tokens": 2.0e9, "seq_len": 4096, "interruptible": True,
                       "window": {"every": "7d", "deadline_days": 3}}),
        ("eval-monthly", {"model": "llama-3-70b", "tokens": 5.0e9, "seq_len": 4096,
                          "window": {"every": "1mo", "deadline_days": 5}}),
        ("refresh-quarterly", {"model": "llama-3-8b", "tokens": 3.0e10, "seq_len": 8192, "interruptible": True,
                               "window": {"every": "3mo", "deadline_days": 14}}),
    ]
    for k in range(n_recurring):
        stem, body = recurring[k % len(recurring)]
        workloads.append({"name": f"{stem}-{k:02d}", "kind": "training", **copy.deepcopy(body)})
    for k in range(n - n_services - n_recurring):
        roll = rng.random()
        if k == 0:
            model, tokens, seq, days, stem = "llama-3-8b", 1.5e12, 8192, 60, "pretrain-8b"
        elif k == 1:
            model, tokens, seq, days, stem = "llama-3-70b", 1.0e11, 8192, 45, "cpt-70b"
        elif roll < 0.5:
            model, tokens, seq, days, stem = ("llama-3-70b", rng.choice([2e10, 3e10, 5e10]), 4096,
                                              rng.choice([14, 21, 30]), "ft-70b")
        else:
            model, tokens, seq, days, stem = ("llama-3-8b", rng.choice([5e9, 1e10, 2e10]), 4096,
                                              rng.choice([7, 14]), "ft-8b")
        start = rng.randrange(1, HORIZON - math.ceil(days / 30))
        workloads.append({"name": f"{stem}-{k:02d}", "kind": "training", "model": model, "tokens": tokens,
                          "seq_len": seq, "interruptible": rng.random() < 0.5,
                          "window": {"start_month": start, "deadline_days": days}})
    return {"apiVersion": "infra-compile/v1", "name": f"hybrid-estate-{n}-s{seed}", "start": START,
            "horizon_months": HORIZON, "sites": copy.deepcopy(SITES) + [dc], "workloads": workloads}


def lifted(spec: dict) -> dict:
    return {**spec, "policy": {**spec.get("policy", {}), **LIFTED}}


def month_later(spec: dict) -> dict:
    """The spec as the team states it a month on: start a month later, the same calendar dates."""
    y, m = map(int, spec["start"].split("-"))
    y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    out = copy.deepcopy(spec)
    out["start"] = f"{y}-{m:02d}"
    for w in out["workloads"]:
        win = w.get("window", {})
        if win.get("start_month", 0) > 0:
            win["start_month"] -= 1
        elif w["kind"] == "inference":       # running: its traffic is the forecast a month on
            t = w["traffic"]
            t["peak_rps"] = round(t["peak_rps"] * (1 + t.get("growth_per_month", 0.0)), 3)
    return out


def edited(spec: dict) -> tuple[dict, list[str]]:
    """month_later(spec) with three ordinary edits, and what they were."""
    out = month_later(spec)
    ws = out["workloads"]
    svc = next(w for w in ws if w["kind"] == "inference")
    svc["traffic"]["peak_rps"] = round(svc["traffic"]["peak_rps"] * 1.5, 3)
    job = next(w for w in ws if w["kind"] == "training" and "every" not in w["window"]
               and w["window"]["start_month"] + 2 + math.ceil(w["window"]["deadline_days"] / 30)
               <= out["horizon_months"])
    job["window"]["start_month"] += 2
    new = {"name": "ft-70b-new", "kind": "training", "model": "llama-3-70b", "tokens": 2.0e10, "seq_len": 4096,
           "interruptible": True, "window": {"start_month": 4, "deadline_days": 21}}
    ws.append(new)
    return out, [f"{svc['name']} traffic +50%", f"{job['name']} two months later", f"add {new['name']}"]


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _progress(pipe, log, t0: float) -> None:
    """Write each new progress (or warning) line the compile writes, with its seconds since t0."""
    last, buf = None, ""
    for chunk in iter(lambda: pipe.read1(65536), b""):
        buf += chunk.decode("utf-8", "replace")
        *lines, buf = re.split(r"[\r\n]", buf)
        for line in lines:
            text = ANSI.sub("", line).strip().lstrip("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏").strip()
            if text and text != last:
                log.write(f"{time.perf_counter() - t0:8.1f}  {text}\n")
                log.flush()
                last = text


def run_compile(label: str, spec: Path, work: Path, timeout: float, baseline: Path | None = None) -> dict:
    """One `infra-compile compile` process: wall seconds, peak RSS, exit code and the plan's figures."""
    out = work / label
    shutil.rmtree(out, ignore_errors=True)
    timing = work / f"{label}.time"
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", str(timing), "infra-compile", "compile", str(spec),
           "-o", str(out), "--format", "json"]
    if baseline is not None:
        cmd += ["--baseline", str(baseline)]
    # The compile shows its progress line only on a terminal: TTY_COMPATIBLE=1 makes rich write it
    # to the pipe, and a thread keeps each new line with its seconds since the start.
    env = {**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "300", "NO_COLOR": "1"}
    t0 = time.perf_counter()
    with open(work / f"{label}.log", "w") as log, open(work / f"{label}.json", "w") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True, env=env)
        reader = threading.Thread(target=_progress, args=(proc.stderr, log, t0), daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            reader.join(5)
            return {"label": label, "rc": None, "wall": time.perf_counter() - t0, "rss_mb": None,
                    "status": f"not done after {timeout:.0f} s"}
        reader.join(5)
    wall = time.perf_counter() - t0
    rss = None
    try:
        parts = timing.read_text().split()
        wall, rss = float(parts[-2]), int(parts[-1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    r = {"label": label, "rc": rc, "wall": wall, "rss_mb": rss, "status": f"exit {rc}"}
    if rc == 0:
        plan = json.loads((out / "plan.json").read_text())
        s = plan["solver"]
        r.update(status=s["status"], total=plan["total_cost_usd"], bound=s["best_bound_usd"], gap=s["gap"],
                 strategy=s["strategy"]["path"], steps=s["strategy"]["steps"], moves=s.get("moves_usd", 0.0),
                 solver_s=s["seconds"])
    return r


def main(argv: list[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800, metavar="SECONDS", help="per compile")
    ap.add_argument("--keep", type=Path, help="work directory (specs, plans, logs) to keep")
    ap.add_argument("--only", nargs="+", choices="abcd", default=list("abcd"),
                    help="run only these compiles (c needs a's plan in --keep)")
    ap.add_argument("--specs-only", action="store_true", help="write the specs and stop")
    args = ap.parse_args(argv)
    console = Console(width=160)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-hybrid-"))
    work.mkdir(parents=True, exist_ok=True)
    spec = hybrid_spec(args.workloads, args.seed)
    changed, edits = edited(spec)
    paths = {"a": work / "spec.yaml", "b": work / "lifted.yaml", "c": work / "edited.yaml"}
    paths["d"] = paths["c"]
    for key, s in (("a", spec), ("b", lifted(spec)), ("c", changed)):
        paths[key].write_text(yaml.safe_dump(s, sort_keys=False))
    n_svc = sum(w["kind"] == "inference" for w in spec["workloads"])
    n_rec = sum("every" in w.get("window", {}) for w in spec["workloads"])
    console.print(f"{spec['name']}: {n_svc} services, {n_rec} recurring jobs, "
                  f"{len(spec['workloads']) - n_svc - n_rec} one-time jobs; edits: {'; '.join(edits)}; work {work}")
    if args.specs_only:
        return
    what = {"a": "limits on (default)", "b": "limits lifted", "c": "3 edits, re-planned from a",
            "d": "3 edits, from scratch"}
    results = {}
    for key in args.only:
        base = work / "a" / "plan.json" if key == "c" else None
        console.print(f"[{time.strftime('%H:%M:%S')}] {key}) {what[key]} ...")
        results[key] = r = run_compile(key, paths[key], work, args.timeout, base)
        console.print(f"    {r['status']} in {r['wall']:.0f} s" + (f", ${r['total']:,.0f} gap {r['gap']:.2%}"
                                                                   if "total" in r else ""))
    table = Table(title=f"{spec['name']} ({os.cpu_count()} cores)")
    for col in ("compile", "status", "total", "bound", "gap", "strategy", "moves", "seconds", "peak RSS"):
        table.add_column(col, justify="left" if col in ("compile", "status", "strategy") else "right")
    for key, r in results.items():
        has = "total" in r
        table.add_row(f"{key}) {what[key]}", r["status"], f"${r['total']:,.0f}" if has else "-",
                      f"${r['bound']:,.0f}" if has else "-", f"{r['gap']:.2%}" if has else "-",
                      r.get("strategy", "-"), f"${r['moves']:,.0f}" if has and key == "c" else "-",
                      f"{r['wall']:.0f}", f"{r['rss_mb']:,.0f} MB" if r.get("rss_mb") else "-")
    console.print(table)

    def ratio(x: str, y: str) -> str:
        if x not in results or y not in results:
            return "not run"
        rx, ry = results[x], results[y]
        done = rx["rc"] is not None and ry["rc"] is not None
        return f"{rx['wall'] / ry['wall']:.2f}" + ("" if done else " (a compile not done: a bound)")

    console.print(f"a/b seconds {ratio('a', 'b')} (target <= 2); c/d seconds {ratio('c', 'd')} (target <= 1)")
    if "gap" in results.get("c", {}) and "gap" in results.get("d", {}):
        c, d = results["c"]["gap"], results["d"]["gap"]
        console.print(f"gap: re-plan {c:.2%}, from scratch {d:.2%}: {'no wider' if c <= d else 'wider'}")
    (work / f"results-{''.join(args.only)}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
