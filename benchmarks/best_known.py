"""Best known plans of the benchmark platforms, and how close the default compile gets.

    python benchmarks/best_known.py record 100 [--seed 0] [--solver highs] [--time-limit 1800]
    python benchmarks/best_known.py check 100 [--seed 0]
    python benchmarks/best_known.py check 30 --sites 6 --horizon 24     # a sweep point
    python benchmarks/best_known.py check 100 --horizon 36 --two-dcs     # 4 clouds, 2 data centres
    python benchmarks/best_known.py check 100 --horizon 36 --two-dcs --long-jobs   # 1e11-2e12 tokens
    python benchmarks/best_known.py rounds 100 [--cycles 50] [--time-limit 1800]
    python benchmarks/best_known.py adopt 100 --plan OUT/plan.json --method "..." --seconds 1800
    python benchmarks/best_known.py show

A platform is `bench_pipeline.platform_spec(n, seed, horizon, sites)`: by default the 24-month,
5-site platform of the workloads sweep; `--horizon` and `--sites` give the points of the horizon
and sites sweeps. `record` writes the platform's spec, compiles it with the given
solver and limits (a long run: any method may supply a best known plan) and keeps the result in
benchmarks/best_known.json if it is cheaper than the one there, or if the one there was made for
other estimates. `check` runs the default compile (`infra-compile SPEC`, nothing else set) as a
user would, end to end, and prints its seconds, cost, reported gap and ratio to the best known.
`rounds` runs the compiler's improving rounds (schedules.rounds on engine.py) for up to `--cycles` cycles, or until
a cycle finds nothing cheaper, or the time limit: the default compile runs about one and a half;
on the platforms here more cycles found cheaper plans than a 30-minute HiGHS search. Its cost is
the compiler's own plan cost (the rounds' integers held, the rest priced exactly as a compile
does), its bound the LP relaxation's. `adopt` takes a plan.json a long run left behind (run by
hand on the same generated spec).

A best known plan belongs to one optimization problem: the spec and every estimate the compiler
makes of it. The record keeps a fingerprint of the candidates the model is built from (ids and
estimates, as `infra-compile estimate --format json` prints them, after the exact reductions)
and one of the catalog's figures (the storage tiers, egress, fabrics and on-prem figures the
model prices beyond the candidates); a change to the performance model or the catalog changes
one of them, and `check` then says the record is stale instead of comparing. `check` also calls
a record stale where the compile's plan is below the record's proven bound or its bound above
the record's plan, which only another problem allows (records made before the catalog was
fingerprinted have only the candidates' fingerprint).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORDS = HERE / "best_known.json"
sys.path.insert(0, str(HERE))

from bench_pipeline import SITES, write_spec  # noqa: E402


DEFAULT_HORIZON, DEFAULT_SITES = 24, len(SITES)


@dataclass(frozen=True)
class Point:
    """One generated platform: `bench_pipeline.platform_spec(n, seed, horizon, sites, two_dcs,
    long_jobs)`, named in best_known.json by `key`."""
    n: int
    seed: int = 0
    horizon: int = DEFAULT_HORIZON
    sites: int = DEFAULT_SITES
    two_dcs: bool = False
    long_jobs: bool = False

    @property
    def key(self) -> str:
        long = "-long" if self.long_jobs else ""
        if self.two_dcs:
            return f"workloads-{self.n}-s{self.seed}-h{self.horizon}-2dc{long}"
        point = "" if (self.horizon, self.sites) == (DEFAULT_HORIZON, DEFAULT_SITES) else f"-h{self.horizon}-k{self.sites}"
        return f"workloads-{self.n}-s{self.seed}{point}{long}"

    @property
    def described(self) -> str:
        long = ", long_jobs=True" if self.long_jobs else ""
        if self.two_dcs:
            return f"bench_pipeline.platform_spec({self.n}, seed={self.seed}, horizon={self.horizon}, two_dcs=True{long})"
        point = ("" if (self.horizon, self.sites) == (DEFAULT_HORIZON, DEFAULT_SITES)
                 else f", horizon={self.horizon}, sites={self.sites}")
        return f"bench_pipeline.platform_spec({self.n}, seed={self.seed}{point}{long})"

    def write(self, directory) -> Path:
        return write_spec(self.n, self.seed, directory, self.horizon, self.sites, self.two_dcs, self.long_jobs)


def fingerprint(spec: Path) -> dict[str, str]:
    """The problem's fingerprints, as a record keeps them: "fingerprint", of the candidates the
    compiler makes of the spec (`candidates_fingerprint`), and "catalog", of the catalog figures
    the model prices beyond them (`catalog_fingerprint`); computed by the checkout's own code in
    a fresh process."""
    code = ("import sys, json; sys.path.insert(0, 'benchmarks'); import best_known as b; "
            "from compiler.pipeline import estimate; print(json.dumps(b.problem_fingerprint(estimate(sys.argv[1])[0])))")
    return json.loads(subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True,
                                     check=True, cwd=ROOT).stdout)


def problem_fingerprint(candidates) -> dict[str, str]:
    """The fingerprints a record keeps of the problem `candidates` are of (fingerprint())."""
    used = {w.model.name for w in candidates.spec.workloads if hasattr(getattr(w, "model", None), "name")}
    plans = any(p.startswith("savings_plan_") for s in candidates.spec.sites for p in getattr(s, "pricing", ()))
    blocks = any(p == "capacity_block" for s in candidates.spec.sites for p in getattr(s, "pricing", ()))
    from compiler.estimate.models import resolve_model
    serves_images = any(w.kind == "inference" and getattr(resolve_model(w.model, candidates.catalog), "family", "")
                        == "vision" for w in candidates.spec.workloads)
    edge = any(getattr(s, "edge", None) is not None for s in candidates.spec.sites)   # edge locations
    regions = {(s.provider, s.region) for s in candidates.spec.sites if getattr(s, "type", "") == "cloud"}
    from compiler.estimate.models import is_moe
    serves_moe = any(w.kind == "inference" and (m := resolve_model(w.model, candidates.catalog)) is not None
                     and is_moe(m) for w in candidates.spec.workloads)
    serving_gpus = ({c.gpu for cs in candidates.by_workload.values() for c in cs if c.kind == "inference"}
                    | {r.gpu for w in candidates.spec.workloads if w.kind == "inference"
                       for r in candidates.rejected.get(w.name, ()) if getattr(r, "gpu", "")})
    return {"fingerprint": candidates_fingerprint(candidates),
            "catalog": catalog_fingerprint(candidates.catalog, used, savings_plans=plans, capacity_blocks=blocks,
                                           vision_serving=serves_images, edge_sites=edge, regions=regions,
                                           moe_serving=serves_moe, serving_gpus=serving_gpus)}


def candidates_fingerprint(candidates) -> str:
    """sha256 of the candidates the model is built from (after the filters and the exact
    reductions, formulate.kept_candidates), as `infra-compile estimate --format json` writes
    them: the optimization problem itself. An estimate that generates fewer candidates prune
    would drop anyway keeps it; a change to the performance model or the catalog does not."""
    from types import MappingProxyType

    from compiler.candidates import Candidates
    from compiler.estimate.table import to_json
    from compiler.optimize.formulate import kept_candidates

    kept = Candidates(spec=candidates.spec, catalog=candidates.catalog,
                      by_workload=MappingProxyType(kept_candidates(candidates)[0]), rejected=MappingProxyType({}))
    data = to_json(kept)
    data.pop("catalog", None)   # its version string; the estimates themselves are what count
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# Catalog fields no estimate or price reads: what the Terraform and Kubernetes files name.
RENDER_ONLY = ("architecture", "serving", "training", "gke_driver", "accelerator", "nccl_topology")


# The factors only an MoE service's expert-parallel candidates read (compiler/estimate/inference.py).
MOE_SERVING_FACTORS = ("ep_copy_bytes_per_hidden", "ep_decode_overlap")


def catalog_fingerprint(catalog, models: set[str] | None = None, savings_plans: bool = True,
                        capacity_blocks: bool = True, vision_serving: bool = True, edge_sites: bool = True,
                        regions: set[tuple[str, str]] | None = None, moe_serving: bool = True,
                        serving_gpus: set[str] | None = None) -> str:
    """sha256 of every figure of the catalog (GPUs, instances and prices, on-prem nodes, fabrics,
    storage tiers, egress, models, factors), without its version and provenance (sources, notes)
    and the facts only the rendered files read (RENDER_ONLY: serving images, accelerator names):
    the model prices storage tiers, egress, fabrics and on-prem figures that no candidate carries,
    so a catalog change can change the problem and leave the candidates' fingerprint equal.
    `models`: only these of the catalog's models count (those the spec names; a model added to
    the catalog changes no other spec's problem). `savings_plans`: whether the Savings Plan shares
    count (a spec none of whose sites lists a Savings Plan never prices one); `capacity_blocks`:
    whether the Capacity Block rates and rules count (likewise, for capacity_block);
    `vision_serving`: whether the vision serving factors count (a spec serving no vision model
    never reads them); `edge_sites`: whether the edge boxes and the fabrics only they carry count
    (only an edge site's locations buy them); `regions`: the (provider, region) of the spec's cloud
    sites, where given: only instances' price rows there count, and instances with none there are
    left out (no candidate is priced anywhere else). An instance's optional nvlink_domain_gpus
    counts where it is set (an instance without one is as it was before the field existed).
    `moe_serving`: whether the expert-parallel serving factors count (MOE_SERVING_FACTORS: a spec
    serving no MoE model never reads them); `serving_gpus`: where given, the GPUs the spec's services are sized on (its
    inference candidates' and rejections'): a serving efficiency of another GPU by tensor-parallel
    degree (<factor>.<gpu>.tp<t>) is no figure of its problem."""
    from dataclasses import fields, is_dataclass

    def plain(x):
        if is_dataclass(x):
            return {f.name: plain(getattr(x, f.name)) for f in fields(x)
                    if f.name not in ("source", "note") + RENDER_ONLY}
        if isinstance(x, Mapping):
            return {str(k): plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x

    figures = {f.name: plain(getattr(catalog, f.name)) for f in fields(catalog) if f.name not in ("version", "sources")}
    if isinstance(figures.get("instances"), dict):
        kept = {}
        for name, inst in figures["instances"].items():
            if isinstance(inst, dict) and inst.get("nvlink_domain_gpus") is None:
                inst.pop("nvlink_domain_gpus", None)
            if regions is not None and isinstance(inst, dict):
                inst["prices"] = [p for p in inst.get("prices", ()) if (inst.get("provider"), p.get("region")) in regions]
                if not inst["prices"]:
                    continue
            kept[name] = inst
        figures["instances"] = kept
    if models is not None and isinstance(figures.get("models"), dict):
        figures["models"] = {k: v for k, v in figures["models"].items() if k in models}
    if not savings_plans and isinstance(figures.get("factors"), dict):
        figures["factors"] = {k: v for k, v in figures["factors"].items()
                              if not k.startswith("savings_plan_estimated_share.")}
    if not capacity_blocks and isinstance(figures.get("factors"), dict):
        figures["factors"] = {k: v for k, v in figures["factors"].items() if not k.startswith("capacity_block_")}
    if not vision_serving and isinstance(figures.get("factors"), dict):
        figures["factors"] = {k: v for k, v in figures["factors"].items() if not k.startswith("vision_inference_")}
    if not moe_serving and isinstance(figures.get("factors"), dict):
        figures["factors"] = {k: v for k, v in figures["factors"].items() if k not in MOE_SERVING_FACTORS}
    if serving_gpus is not None and isinstance(figures.get("factors"), dict):
        figures["factors"] = {k: v for k, v in figures["factors"].items()
                              if not (re.fullmatch(r"[^.]+\.[^.]+\.tp\d+", k) and k.split(".")[1] not in serving_gpus)}
    if not edge_sites:
        nodes = catalog.onprem_nodes
        boxes = {k for k, n in nodes.items() if getattr(n, "edge", False)}
        others = {f for k, n in nodes.items() if k not in boxes for f in getattr(n, "fabrics", ())}
        only_boxes = {f for k in boxes for f in getattr(nodes[k], "fabrics", ())} - others
        # and the flag itself, which a spec without edge sites never reads (the node is no box)
        figures["onprem_nodes"] = {k: {f: x for f, x in v.items() if f != "edge"}
                                   for k, v in figures["onprem_nodes"].items() if k not in boxes}
        figures["fabrics"] = {k: v for k, v in figures["fabrics"].items() if k not in only_boxes}
    return hashlib.sha256(json.dumps(figures, sort_keys=True).encode()).hexdigest()[:16]


def other_problem(record: dict, fp: dict[str, str]) -> str | None:
    """Why `record` was made for another problem than the one fingerprinted `fp` (None where it
    was not, as far as its fingerprints tell: a record made before the catalog was fingerprinted
    has none of it, and contradiction() is then all that can tell)."""
    if record["fingerprint"] != fp["fingerprint"]:
        return "was made for other estimates"
    if record.get("catalog", fp["catalog"]) != fp["catalog"]:
        return "was made on another catalog"
    return None


def replaces(record: dict, fp: dict[str, str], cost: float, bound: float) -> bool:
    """Whether a run of the problem fingerprinted `fp`, its plan at `cost` with a proven `bound`,
    replaces `record`: where the record is of another problem, or the plan is cheaper; a record
    without the catalog's fingerprint also gives way to a plan as cheap (which has it)."""
    if other_problem(record, fp) or contradiction(record, cost, bound):
        return True
    if "catalog" not in record:
        return cost <= record["cost_usd"] * (1 + TOLERANCE)
    return cost < record["cost_usd"] * (1 - TOLERANCE)


def compile_plan(spec: Path, args: list[str]) -> tuple[dict, float]:
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "compiler", "compile", str(spec), "-o", out, "-q", *args],
                           capture_output=True, text=True, cwd=ROOT)
        seconds = time.perf_counter() - t0
        if r.returncode != 0:
            raise SystemExit(f"compile failed (exit {r.returncode}):\n{r.stderr}")
        return json.loads((Path(out) / "plan.json").read_text()), seconds


def load() -> dict:
    return json.loads(RECORDS.read_text()) if RECORDS.is_file() else {"platforms": {}}


def commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return r.stdout.strip() or "unknown"


def record(point: Point, solver: str, time_limit: float) -> None:
    with tempfile.TemporaryDirectory() as d:
        spec = point.write(d)
        fp = fingerprint(spec)
        plan, seconds = compile_plan(spec, ["--solver", solver, "--time-limit", str(time_limit),
                                            "--gap", "0", "--max-nodes", "0"])
    keep(point, fp, plan, f"{solver}, --gap 0 --max-nodes 0 --time-limit {time_limit:g}", seconds)


def rounds(point: Point, cycles: int, time_limit: float, workers: int) -> None:
    """The improving rounds run on, cycle after cycle, in this process (the compiler's own code,
    with its cycle count and thread count raised or lowered)."""
    sys.path.insert(0, str(ROOT))
    from compiler.optimize import DEFAULT, schedules
    from compiler.optimize.engine import search
    from compiler.readback.decode import decode
    from compiler.optimize.formulate import formulate
    from compiler.optimize.start import greedy_start
    from compiler.optimize.steps import Models, polish, unsearched
    from compiler.pipeline import estimate

    with tempfile.TemporaryDirectory() as d:
        spec = point.write(d)
        fp = fingerprint(spec)
        t0 = time.perf_counter()
        problem = formulate(estimate(spec)[0])
    model = Models(problem, DEFAULT.seed)
    plan, bound = search(problem, greedy_start(problem), model,
                         schedules.rounds(problem, cycles=cycles, workers=workers), seconds=time_limit,
                         say=lambda m: print(f"{time.perf_counter() - t0:7.1f} s  {m}", flush=True))
    sol, price = unsearched(plan, bound, model(0), "highs")     # as the compile finishes such a plan
    result = decode(problem, polish(problem, sol, "highs", price, DEFAULT))
    seconds = time.perf_counter() - t0
    keep(point, fp,
         {"total_cost_usd": result.total_cost_usd,
          "solver": {"best_bound_usd": result.solver.best_bound_usd, "status": "feasible"}},
         f"improving rounds, up to {cycles} cycles, {workers} at a time, time limit {time_limit:g} s", seconds)


def adopt(point: Point, plan_path: Path, method: str, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as d:
        fp = fingerprint(point.write(d))
    keep(point, fp, json.loads(plan_path.read_text()), method, seconds)


def keep(point: Point, fp: dict[str, str], plan: dict, method: str, seconds: float) -> None:
    s = plan["solver"]
    entry = {"spec": point.described, **fp,
             "cost_usd": plan["total_cost_usd"], "best_bound_usd": s["best_bound_usd"], "method": method,
             "status": s["status"], "seconds": round(seconds, 1), "recorded": dt.date.today().isoformat(),
             "commit": commit()}
    data = load()
    name = point.key
    old = data["platforms"].get(name)
    keep_old = old is not None and not replaces(old, fp, entry["cost_usd"], entry["best_bound_usd"])
    # the best bound seen, where both bounds are of this problem (a record without the catalog's
    # fingerprint may be of another catalog: its bound is not carried over)
    if (old is not None and old.get("catalog") == fp["catalog"] and not other_problem(old, fp)
            and not contradiction(old, entry["cost_usd"], entry["best_bound_usd"])):
        entry["best_bound_usd"] = old["best_bound_usd"] = max(entry["best_bound_usd"], old["best_bound_usd"])
    if keep_old:
        print(f"{name}: kept ${old['cost_usd']:,.2f} (this run: ${entry['cost_usd']:,.2f})")
    else:
        data["platforms"][name] = entry
        print(f"{name}: recorded ${entry['cost_usd']:,.2f}, bound ${entry['best_bound_usd']:,.2f}")
    data["platforms"] = dict(sorted(data["platforms"].items()))
    RECORDS.write_text(json.dumps(data, indent=2) + "\n")


# relative slack for comparing two solvers' figures of one problem (their rounding, not the model)
TOLERANCE = 1e-6


def contradiction(record: dict, cost: float, bound: float) -> str | None:
    """Why `record` cannot be of the problem a compile priced at `cost` with a proven `bound`
    (None where it can): a plan below the record's proven bound, or a bound above the record's
    plan. Records made before the catalog was fingerprinted (no "catalog") carry the candidates'
    fingerprint only, which a catalog change can leave equal; these two can only happen where
    the problems differ."""
    if cost < record["best_bound_usd"] * (1 - TOLERANCE):
        return f"this plan (${cost:,.2f}) is below the record's proven bound (${record['best_bound_usd']:,.2f})"
    if bound > record["cost_usd"] * (1 + TOLERANCE):
        return f"this compile's proven bound (${bound:,.2f}) is above the record's plan (${record['cost_usd']:,.2f})"
    return None


def check(point: Point) -> None:
    data = load()
    best = data["platforms"].get(point.key)
    with tempfile.TemporaryDirectory() as d:
        spec = point.write(d)
        fp = fingerprint(spec)
        plan, seconds = compile_plan(spec, [])
    s = plan["solver"]
    line = (f"{point.key}: default compile {seconds:.1f} s, ${plan['total_cost_usd']:,.2f}, "
            f"{s['status']}, reported gap {s['gap']:.2%}")
    if best is None:
        print(line + "; no best known plan recorded")
    elif why := other_problem(best, fp):
        print(line + f"; the best known plan (${best['cost_usd']:,.2f}) {why}: re-record")
    elif why := contradiction(best, plan["total_cost_usd"], s["best_bound_usd"]):
        print(line + f"; the best known plan was made for another problem ({why}): re-record")
    else:
        print(line + f"; best known ${best['cost_usd']:,.2f} (bound ${best['best_bound_usd']:,.2f}): "
              f"ratio {plan['total_cost_usd'] / best['cost_usd']:.4f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("record", "check", "adopt", "rounds"):
        p = sub.add_parser(name)
        p.add_argument("n", type=int)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--horizon", type=int, default=DEFAULT_HORIZON, help="months (the horizon sweep)")
        p.add_argument("--sites", type=int, default=DEFAULT_SITES, help="sites (the sites sweep)")
        p.add_argument("--two-dcs", action="store_true",
                       help="AWS in two regions, GCP, Azure and two data centres (--sites not used)")
        p.add_argument("--long-jobs", action="store_true",
                       help="training jobs of 1e11 to 2e12 tokens in windows of 14 to 120 days")
        if name == "record":
            p.add_argument("--solver", default="highs", choices=["cbc", "highs"])
            p.add_argument("--time-limit", type=float, default=1800.0)
        if name == "rounds":
            p.add_argument("--cycles", type=int, default=50)
            p.add_argument("--time-limit", type=float, default=1800.0)
            p.add_argument("--workers", type=int, default=2, help="rounds at a time (Settings.workers)")
        if name == "adopt":
            p.add_argument("--plan", type=Path, required=True)
            p.add_argument("--method", required=True)
            p.add_argument("--seconds", type=float, required=True)
    sub.add_parser("show")
    a = ap.parse_args(argv)
    if a.cmd != "show":
        point = Point(a.n, a.seed, a.horizon, a.sites, a.two_dcs, a.long_jobs)
    if a.cmd == "record":
        record(point, a.solver, a.time_limit)
    elif a.cmd == "rounds":
        rounds(point, a.cycles, a.time_limit, a.workers)
    elif a.cmd == "adopt":
        adopt(point, a.plan, a.method, a.seconds)
    elif a.cmd == "check":
        check(point)
    else:
        print(json.dumps(load(), indent=2))


if __name__ == "__main__":
    main()
