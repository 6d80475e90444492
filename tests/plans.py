"""Hand-made Plans for the render tests: realistic shapes the optimizer produces.

Each covers a provider or site type and both orchestrators; figures are plausible, not
solved (the render stage only translates what a Plan says).
"""

from __future__ import annotations

from dataclasses import replace

from compiler.plan import (CostBreakdown, EstimateFigures, Holding, LayoutPlan, Placement, Plan, Pool, SitePlan,
                           SolverInfo, StoragePlan, WorkloadPlan)

SOLVER = SolverInfo(name="cbc", status="optimal", objective_usd=1.0, best_bound_usd=1.0,
                    gap=0.0, seconds=0.1)
HORIZON = 12


def held(p: Placement, horizon: int = HORIZON) -> Placement:
    """The placement holding its nodes of its own pricing all month, every month (unless it
    says otherwise): what these plans assume."""
    if p.holdings:
        return p
    h = Holding(p.pricing, (p.nodes,) * horizon, (p.nodes * 730.0,) * horizon)
    extra = {}
    if p.replicas:
        extra = {"gpus_per_replica": max(1, p.gpus // p.replicas), "monthly_replicas": (p.replicas,) * horizon}
    return replace(p, holdings=(h,), candidate=p.candidate or f"{p.site}/{p.instance}/{p.pricing}", **extra)


def _plan(name: str, sites, pools, workloads, storage) -> Plan:
    workloads = [replace(w, placements=tuple(held(p) for p in w.placements)) for w in workloads]
    return Plan(spec_name=name, spec_sha256="0" * 64, catalog_version="test",
                horizon_months=HORIZON, solver=SOLVER, total_cost_usd=1.0,
                cost_breakdown_usd=CostBreakdown(cloud_compute=1.0), sites=tuple(sites),
                pools=tuple(pools), workloads=tuple(workloads), storage=tuple(storage))


def training(name, site, instance, pricing, nodes, gpus, tp=8, pp=1, dp=None,
             orchestrator="slurm", gpu="H100") -> WorkloadPlan:
    dp = dp if dp is not None else max(1, gpus // (tp * pp))
    return WorkloadPlan(
        name=name, kind="training", gpu=gpu, gpus=gpus, layout=LayoutPlan(tp=tp, pp=pp, dp=dp),
        placements=(Placement(site=site, instance=instance, pricing=pricing, nodes=nodes,
                              gpus=gpus),),
        estimate=EstimateFigures(memory_gb_per_gpu=61.2, duration_hours=410.5, tokens_per_s=1.2e6, mfu=0.41),
        cost_usd=1.0, orchestrator=orchestrator)


def owned_job(name, nodes, months, orchestrator="slurm") -> WorkloadPlan:
    """A training job on `nodes` of onprem_plan's owned dgx-h100 at fra-dc1, in `months` only."""
    series = tuple(nodes if m in months else 0 for m in range(HORIZON))
    w = training(name, "fra-dc1", "dgx-h100", "owned", nodes, 8 * nodes, tp=1, orchestrator=orchestrator)
    held_ = Holding("owned", series, tuple(730.0 * n for n in series))
    return replace(w, placements=(replace(w.placements[0], holdings=(held_,)),))


def inference(name, placements, tp, gpu="H100", batch=48) -> WorkloadPlan:
    return WorkloadPlan(
        name=name, kind="inference", gpu=gpu, gpus=sum(p.gpus for p in placements),
        layout=LayoutPlan(tp=tp), placements=tuple(placements),
        estimate=EstimateFigures(memory_gb_per_gpu=70.0, tokens_per_s=9000.0, ttft_ms=420.0, tpot_ms=38.0,
                                 batch=batch),
        cost_usd=1.0, orchestrator="kubernetes")


def aws_plan() -> Plan:
    return _plan(
        "llm-pretrain-aws",
        sites=[SitePlan("aws-use1", "cloud", "aws", "us-east-1", ("slurm",)),
               SitePlan("aws-usw2", "cloud", "aws", "us-west-2", ("kubernetes",))],
        pools=[Pool("aws-use1", "p5.48xlarge", "H100", 8, 16, "reserved_1y", "efa"),
               Pool("aws-use1", "p5.48xlarge", "H100", 8, 8, "spot", "efa"),
               Pool("aws-usw2", "p4de.24xlarge", "A100-80GB", 8, 4, "on_demand", "efa"),
               Pool("aws-usw2", "g6e.48xlarge", "L40S", 8, 3, "on_demand", "ethernet")],
        workloads=[
            training("llama-70b-pretrain", "aws-use1", "p5.48xlarge", "reserved_1y", 16, 128,
                     tp=8, pp=4),
            # recurring jobs: one scheduled launcher each (a scrontab entry, a CronJob)
            replace(training("llama-8b-ablation", "aws-use1", "p5.48xlarge", "spot", 8, 64, tp=2),
                    every="1mo", runs=12),
            replace(training("finetune-13b", "aws-usw2", "p4de.24xlarge", "on_demand", 4, 32, tp=4,
                             orchestrator="kubernetes", gpu="A100-80GB"),
                    every="7d", runs=52, deadline_days=3.0),
            inference("chat-8b", [Placement("aws-usw2", "g6e.48xlarge", "on_demand", 3, 24, 6)],
                      tp=4, gpu="L40S"),
        ],
        storage=[StoragePlan("aws-use1", "fsx-lustre", 52.0, 1.0),
                 StoragePlan("aws-usw2", "fsx-lustre", 4.0, 1.0)])


def gcp_plan() -> Plan:
    return _plan(
        "gcp-platform",
        sites=[SitePlan("gcp-usc1", "cloud", "gcp", "us-central1", ("slurm",)),
               SitePlan("gcp-euw4", "cloud", "gcp", "europe-west4", ("kubernetes",))],
        pools=[Pool("gcp-usc1", "a3-megagpu-8g", "H100", 8, 8, "spot", "gpudirect-tcpxo"),
               Pool("gcp-euw4", "a3-highgpu-8g", "H100", 8, 2, "reserved_1y", "gpudirect-tcpx"),
               Pool("gcp-euw4", "g2-standard-96", "L4", 8, 2, "on_demand", "ethernet")],
        workloads=[
            training("mixtral-sft", "gcp-usc1", "a3-megagpu-8g", "spot", 8, 64, tp=8),
            training("vit-b16", "gcp-euw4", "a3-highgpu-8g", "reserved_1y", 2, 16, tp=1,
                     orchestrator="kubernetes"),
            inference("chat-llama3-8b",
                      [Placement("gcp-euw4", "g2-standard-96", "on_demand", 2, 16, 8)],
                      tp=2, gpu="L4", batch=24),
        ],
        storage=[StoragePlan("gcp-usc1", "parallelstore", 20.0, 1.0),
                 StoragePlan("gcp-euw4", "filestore", 3.0, 1.0)])


def azure_plan() -> Plan:
    return _plan(
        "azure-platform",
        sites=[SitePlan("azure-eastus", "cloud", "azure", "eastus", ("kubernetes", "slurm"))],
        pools=[Pool("azure-eastus", "Standard_ND96isr_H100_v5", "H100", 8, 12, "on_demand",
                    "infiniband"),
               Pool("azure-eastus", "Standard_ND96amsr_A100_v4", "A100-80GB", 8, 2, "spot",
                    "infiniband")],
        workloads=[
            training("llama-70b-pretrain", "azure-eastus", "Standard_ND96isr_H100_v5",
                     "on_demand", 12, 96, tp=8, pp=2),
            inference("chat-70b",
                      [Placement("azure-eastus", "Standard_ND96amsr_A100_v4", "spot", 2, 16, 4)],
                      tp=4, gpu="A100-80GB"),
        ],
        storage=[StoragePlan("azure-eastus", "managed-lustre", 30.0, 1.0)])


def onprem_plan() -> Plan:
    return _plan(
        "hybrid-llm-platform",
        sites=[SitePlan("fra-dc1", "on_prem", None, None, ("kubernetes", "slurm")),
               SitePlan("aws-use1", "cloud", "aws", "us-east-1", ("kubernetes",))],
        pools=[Pool("fra-dc1", "dgx-h100", "H100", 8, 8, "owned", "infiniband-ndr"),
               Pool("fra-dc1", "hgx-h200", "H200", 8, 40, "purchase", "infiniband-ndr"),
               Pool("fra-dc1", "l40s-server", "L40S", 8, 4, "purchase", "roce-400g"),
               Pool("aws-use1", "p5.48xlarge", "H100", 8, 2, "on_demand", "efa")],
        workloads=[
            training("llama-405b-pretrain", "fra-dc1", "hgx-h200", "purchase", 40, 320, tp=8,
                     pp=8, gpu="H200"),
            training("resnet50", "fra-dc1", "dgx-h100", "owned", 1, 4, tp=1),
            inference("chat-70b",
                      [Placement("fra-dc1", "l40s-server", "purchase", 4, 32, 8),
                       Placement("aws-use1", "p5.48xlarge", "on_demand", 2, 16, 4)],
                      tp=4, gpu="L40S"),
        ],
        storage=[StoragePlan("fra-dc1", "onprem-lustre", 640.0, 1.0),
                 StoragePlan("aws-use1", "fsx-lustre", 1.0, 1.0)])


PLANS = {"aws": aws_plan, "gcp": gcp_plan, "azure": azure_plan, "onprem": onprem_plan}


def split_plan() -> Plan:
    """Holdings that disagree with a label (not among PLANS: no golden tree).

    `burst` (32 x p5.48xlarge in month 10) is labelled reserved_1y, as a guess would have it: it
    rides the one reserved node's 30 idle hours, but its 32 nodes are on demand. `chat` serves from
    two candidates at the same site: 4 replicas of 2 GPUs and 2 replicas of 4 GPUs."""
    months = lambda value, *active: tuple(value if m in active else 0 for m in range(HORIZON))  # noqa: E731
    steady = replace(training("steady", "aws-use1", "p5.48xlarge", "reserved_1y", 1, 8, tp=8),
                     placements=(Placement("aws-use1", "p5.48xlarge", "reserved_1y", 1, 8,
                                           candidate="steady/aws-use1/p5.48xlarge/8g/od", holdings=(
                                               Holding("reserved_1y", (1,) * 11 + (0,),
                                                       (730.0,) * 10 + (700.0, 0.0)),)),))
    burst = replace(training("burst", "aws-use1", "p5.48xlarge", "reserved_1y", 32, 256, tp=8, pp=4),
                    placements=(Placement("aws-use1", "p5.48xlarge", "reserved_1y", 32, 256,
                                          candidate="burst/aws-use1/p5.48xlarge/256g/od", holdings=(
                                              Holding("reserved_1y", months(1, 10), months(30.0, 10)),
                                              Holding("on_demand", months(32, 10),
                                                      months(32 * 730.0 - 30.0, 10)))),))
    chat = inference("chat", [
        Placement("aws-use1", "g6e.48xlarge", "on_demand", 1, 8, 4, candidate="chat/aws-use1/g6e.48xlarge/tp2",
                  gpus_per_replica=2, holdings=(Holding("on_demand", (1,) * HORIZON, (730.0,) * HORIZON),),
                  monthly_replicas=(4,) * HORIZON),
        Placement("aws-use1", "g6e.48xlarge", "on_demand", 1, 8, 2, candidate="chat/aws-use1/g6e.48xlarge/tp4",
                  gpus_per_replica=4, holdings=(Holding("on_demand", (1,) * HORIZON, (730.0,) * HORIZON),),
                  monthly_replicas=(2,) * HORIZON)], tp=2, gpu="L40S")
    return _plan(
        "split-platform",
        sites=[SitePlan("aws-use1", "cloud", "aws", "us-east-1", ("kubernetes", "slurm"))],
        pools=[Pool("aws-use1", "p5.48xlarge", "H100", 8, 1, "reserved_1y", "efa"),
               Pool("aws-use1", "p5.48xlarge", "H100", 8, 32, "on_demand", "efa"),
               Pool("aws-use1", "g6e.48xlarge", "L40S", 8, 2, "on_demand", "ethernet")],
        workloads=[steady, burst, chat],
        storage=[StoragePlan("aws-use1", "fsx-lustre", 10.0, 1.0)])


def renamed(plan: Plan, old: str, new: str) -> Plan:
    """The same plan with one workload renamed (for edge-of-pattern and hostile names)."""
    return replace(plan, workloads=tuple(replace(w, name=new) if w.name == old else w
                                         for w in plan.workloads))


def set_at(seq, i, value) -> tuple:
    """seq as a tuple with item i replaced by value."""
    out = list(seq)
    out[i] = value
    return tuple(out)


def workload(plan: Plan, name: str) -> WorkloadPlan:
    return next(w for w in plan.workloads if w.name == name)


def with_workload(plan: Plan, name: str, **changes) -> Plan:
    """The same plan with `changes` made to one workload (dataclasses.replace)."""
    return replace(plan, workloads=tuple(replace(w, **changes) if w.name == name else w for w in plan.workloads))


def with_placement(plan: Plan, name: str, index: int, **changes) -> Plan:
    """The same plan with `changes` made to one placement of one workload."""
    w = workload(plan, name)
    return with_workload(plan, name, placements=set_at(w.placements, index, replace(w.placements[index], **changes)))


def site_renamed(plan: Plan, old: str, new: str) -> Plan:
    """The same plan with one site renamed everywhere it is referred to."""
    def s(name: str) -> str:
        return new if name == old else name
    return replace(
        plan,
        sites=tuple(replace(x, name=s(x.name)) for x in plan.sites),
        pools=tuple(replace(p, site=s(p.site)) for p in plan.pools),
        workloads=tuple(replace(w, placements=tuple(replace(p, site=s(p.site))
                                                    for p in w.placements))
                        for w in plan.workloads),
        storage=tuple(replace(x, site=s(x.site)) for x in plan.storage))


_RENDERED: dict[str, dict[str, str]] = {}


def rendered(case: str) -> dict[str, str]:
    """The rendered tree of one of PLANS (rendered once per test session)."""
    if case not in _RENDERED:
        from compiler.catalog import load_catalog
        from compiler.render import render
        _RENDERED[case] = render(PLANS[case](), load_catalog())
    return _RENDERED[case]


def write(files: dict[str, str], root) -> None:
    from pathlib import Path
    for rel, text in files.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
