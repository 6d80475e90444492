"""Hand-made Specs and Candidates for the optimizer tests (no estimate stage needed).

Prices come from the real catalog (compiler.catalog.load_catalog), so the tests exercise the
same unit costs the compiler uses.
"""

from __future__ import annotations

from types import MappingProxyType

from compiler.candidates import Candidate, Candidates, InferenceEstimate, Layout, TrainingEstimate
from compiler.catalog import load_catalog
from compiler.spec import (CloudSite, InferenceWindow, InferenceWorkload, OnPremSite, OwnedNodes, Policy, Slo,
                           Spec, Traffic, TrainingWindow, TrainingWorkload)

CATALOG = load_catalog()
HOURS = 730.0


def cloud(name="aws-use1", region="us-east-1", provider="aws", pricing=("on_demand", "spot"), quotas=None,
          index=0) -> CloudSite:
    return CloudSite(name=name, provider=provider, region=region, pricing=tuple(pricing),
                     quotas=MappingProxyType(dict(quotas or {})), path=f"$.sites[{index}]")


def onprem(name="dc1", power_kw=2000.0, usd_kwh=0.05, pue=1.2, max_racks=40, owned=(), index=1) -> OnPremSite:
    return OnPremSite(name=name, power_kw=power_kw, electricity_usd_per_kwh=usd_kwh, pue=pue,
                      max_racks=max_racks, owned=tuple(OwnedNodes(i, n) for i, n in owned),
                      path=f"$.sites[{index}]")


def training(name, index=0, start=0, model="llama-3-8b") -> TrainingWorkload:
    return TrainingWorkload(name=name, model=model, window=TrainingWindow(start_month=start), tokens=1e10,
                            path=f"$.workloads[{index}]")


def inference(name, index=0, rps=10.0, out=100, growth=0.0, availability=0.99, start=0) -> InferenceWorkload:
    return InferenceWorkload(name=name, model="llama-3-8b",
                             traffic=Traffic(peak_rps=rps, input_tokens=500, output_tokens=out,
                                             growth_per_month=growth),
                             # no headroom: the candidates are made by hand (benchmarks/generate.py's too)
                             slo=Slo(ttft_p99_ms=1000, tpot_p99_ms=60, availability=availability, headroom=0.0),
                             window=InferenceWindow(start), path=f"$.workloads[{index}]")


# The operability limits on by default are lifted here: these fixtures test the model's other
# parts (and benchmarks/generate.py's platforms compare with plans found without them); the tests
# of the limits set them.
LIFTED = Policy(after_horizon="prorated").without_limits()   # the hand-worked costs are prorated


def spec(sites, workloads, horizon=12, policy=LIFTED) -> Spec:
    return Spec(api_version="infra-compile/v1", name="test", horizon_months=horizon, sites=tuple(sites),
                policy=policy, workloads=tuple(workloads), sha256="0" * 64)


def node_gpus(site, instance) -> tuple[str, int]:
    """(GPU type, GPUs per node) of a cloud instance or an on-prem node model."""
    if site.type == "cloud":
        i = CATALOG.instances[instance]
        return i.gpu, i.gpus
    n = CATALOG.onprem_nodes[instance]
    return n.gpu, n.gpus


def usage(start: int, hours: float) -> tuple[tuple[int, float], ...]:
    out, m = [], start
    while hours > 1e-9:
        h = min(HOURS, hours)
        out.append((m, h))
        hours -= h
        m += 1
    return tuple(out)


def train_cand(w: TrainingWorkload, site, instance, nodes, hours, spot=False, fabric=None, tag="") -> Candidate:
    gpu, gpn = node_gpus(site, instance)
    fab = fabric or (CATALOG.instances[instance].fabric if site.type == "cloud" else "infiniband-ndr")
    cid = f"{w.name}/{site.name}/{instance}+{fab}/{nodes * gpn}g/{'spot' if spot else 'od'}{tag}"
    return Candidate(id=cid, workload=w.name, kind="training", site=site.name, site_type=site.type,
                     instance=instance, gpu=gpu, gpus_per_node=gpn, gpus=nodes * gpn, nodes=nodes,
                     layout=Layout(dp=nodes * gpn), fabric=fab, spot=spot,
                     estimate=TrainingEstimate(memory_gb_per_gpu=40.0, duration_hours=hours, mfu=0.4,
                                               tokens_per_s=1e5),
                     start_month=w.window.start_month, usage=usage(w.window.start_month, hours))


def infer_cand(w: InferenceWorkload, site, instance, tp, tokens_per_s, fabric=None, tag="") -> Candidate:
    gpu, gpn = node_gpus(site, instance)
    fab = fabric or (CATALOG.instances[instance].fabric if site.type == "cloud" else "ethernet-100g")
    return Candidate(id=f"{w.name}/{site.name}/{instance}+{fab}/tp{tp}{tag}", workload=w.name, kind="inference",
                     site=site.name, site_type=site.type, instance=instance, gpu=gpu, gpus_per_node=gpn,
                     gpus=tp, nodes=0, layout=Layout(tp=tp), fabric=fab, spot=False,
                     estimate=InferenceEstimate(memory_gb_per_gpu=30.0, tokens_per_s=tokens_per_s, ttft_ms=200.0,
                                                tpot_ms=40.0, batch=32),
                     start_month=w.window.start_month)


def candidates(sp: Spec, cands, rejected=None) -> Candidates:
    by = {w.name: tuple(sorted((c for c in cands if c.workload == w.name), key=lambda c: c.id))
          for w in sp.workloads}
    return Candidates(spec=sp, catalog=CATALOG, by_workload=MappingProxyType(by),
                      rejected=MappingProxyType(dict(rejected or {})))


def restrict(cs: Candidates, keep_ids) -> Candidates:
    keep = set(keep_ids)
    by = {w: tuple(c for c in cands if c.id in keep or all(x.id not in keep for x in cands))
          for w, cands in cs.by_workload.items()}
    return Candidates(spec=cs.spec, catalog=cs.catalog, by_workload=MappingProxyType(by), rejected=cs.rejected)


def reserved_or_on_demand(needs, term_usd: float, node_month_usd: float = 6.0):
    """A hand-sized Problem of one service over len(needs) months: month m needs needs[m]
    replicas' worth of load (y[a@m] whole replicas, at most 2), each on a node of its own, on
    demand at `node_month_usd` a node-month (ondemand[p@m]) or on a node reserved for the whole
    horizon (reserved[p@000], at most 2) at `term_usd` the node."""
    from types import SimpleNamespace

    from compiler.optimize.formulate import Constraint, Problem, Variable

    months = range(len(needs))
    v = [Variable(f"y[a@00{m}]", "integer", 2, month=m, family="y") for m in months]
    v += [Variable(f"ondemand[p@00{m}]", "continuous", costs=(("cloud_compute", node_month_usd),), month=m)
          for m in months]
    v += [Variable("reserved[p@000]", "integer", 2, costs=(("cloud_compute", term_usd),))]
    c = []
    for m, need in zip(months, needs):
        c.append(Constraint(f"demand[a@00{m}]", "demand", ((f"y[a@00{m}]", 1.0),), ">=", float(need)))
        c.append(Constraint(f"ondemand[p@00{m}]", "cloud_capacity",
                            ((f"ondemand[p@00{m}]", 1.0), ("reserved[p@000]", 1.0), (f"y[a@00{m}]", -1.0)),
                            ">=", 0.0))
    return Problem(spec=SimpleNamespace(horizon_months=len(needs)), candidates=None, chosen_from={},
                   variables=tuple(v), constraints=tuple(c))
