"""Hand-made, realistic Plans for the report, diff and plan-schema tests.

`hybrid_plan()`: acme-ml-platform over 36 months on an AWS site (aws-use1, us-east-1) and an
on-prem site (fra-dc1, 8 owned DGX H100):
- llama-70b-pretrain: llama-3-70b, 2e12 tokens on 512 H100 (64 x p5.48xlarge on demand).
  6 * 70e9 * 2e12 = 8.4e23 FLOPs / (512 * 989e12 * 0.40 MFU) = 4.15e6 s = 1152 h (48 days).
- chat-70b: llama-3-70b fp8 at tp=2 (70 GB of weights), 1,500 output tokens/s per replica;
  12,500 tok/s at month 2 growing 2 %/month -> 23,900 tok/s at month 35 -> 16 replicas per
  site, because availability 0.999 means each site must carry the peak without the other.
- resnet50: 90 epochs of ImageNet-1k on 8 owned H100 at fra-dc1.

`doubled_inference_plan()`: the same spec with chat-70b's peak_rps doubled: 32 replicas per
site, the aws-use1 reserved pool resized 4 -> 8 nodes, the owned fra-dc1 nodes all taken by
inference, so resnet50 moves to a new aws-use1 spot pool; the total cost goes up.

Costs follow the catalog's prices (p5.48xlarge us-east-1: 55.04 $/h on demand, 39.6288
reserved 1y, 24.768 spot); on-prem power is 10.2 kW * 1.3 PUE * 0.15 $/kWh per node-hour.
"""

from __future__ import annotations

from compiler.plan import (Alternative, BindingConstraint, BreakEven, CostBreakdown, EstimateFigures, Holding,
                           SiteCost, LayoutPlan, OptionPart, Placement, Plan, Pool, Reservation,
                           SitePlan, SolverInfo, StoragePlan, WorkloadPlan)

HORIZON = 36
HOURS = 730.0
P5_OD, P5_R1, P5_SPOT = 55.04, 39.6288, 24.768
POWER_NODE_HOUR = round(10.2 * 1.3 * 0.15, 6)       # 1.989 $/node-hour on-prem
SHA_A = "3f1c" + "0" * 56 + "aa01"
SHA_B = "3f1c" + "0" * 56 + "bb02"


def _months(start: int, end: int, value, other=0):
    """A per-month series: `value` in months [start, end), `other` elsewhere."""
    return tuple(value if start <= m < end else other for m in range(HORIZON))


def _hours(per_month: dict[int, float], horizon: int = HORIZON) -> tuple[float, ...]:
    return tuple(float(per_month.get(m, 0.0)) for m in range(horizon))


def _held(pricing: str, nodes: int, hours: dict[int, float], horizon: int = HORIZON) -> Holding:
    """A holding of `nodes` nodes in the months of `hours` (month -> hours run on each node)."""
    return Holding(pricing, tuple(nodes if m in hours else 0 for m in range(horizon)),
                   _hours({m: nodes * h for m, h in hours.items()}, horizon))


def _sites() -> tuple[SitePlan, ...]:
    return (
        SitePlan(name="aws-use1", type="cloud", provider="aws", region="us-east-1",
                 orchestrators=("kubernetes", "slurm")),
        SitePlan(name="fra-dc1", type="on_prem", provider=None, region=None,
                 orchestrators=("kubernetes", "slurm")),
    )


def _pretrain() -> WorkloadPlan:
    cost = round(P5_OD * 64 * 1152, 2)                         # 4,057,989.12
    return WorkloadPlan(
        name="llama-70b-pretrain", kind="training", gpu="H100", gpus=512,
        layout=LayoutPlan(tp=8, pp=4, dp=16, ep=1),
        placements=(Placement(site="aws-use1", instance="p5.48xlarge", pricing="on_demand",
                              nodes=64, gpus=512, replicas=0,
                              candidate="llama-70b-pretrain/aws-use1/p5.48xlarge/512g/od",
                              holdings=(_held("on_demand", 64, {0: HOURS, 1: 422.0}),)),),
        estimate=EstimateFigures(memory_gb_per_gpu=61.4, duration_hours=1152.0, mfu=0.4, tokens_per_s=482253.0),
        cost_usd=cost, orchestrator="slurm", start_month=0,
        # priced alone, the chosen on-demand job costs what the plan charges it (nothing shared)
        chosen_alone=Alternative(
            site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus=512, pricing="on_demand",
            cost_usd=cost, delta_usd=0.0,
            parts=(OptionPart("aws-use1", "p5.48xlarge", "H100", 512, "on_demand", 64, 0, 64 * 1152.0,
                              0, 1, cost),)),
        alternatives=(
            Alternative(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus=512,
                        pricing="reserved_1y", cost_usd=round(P5_R1 * 64 * HOURS * 12, 2),
                        delta_usd=round(P5_R1 * 64 * HOURS * 12 - cost, 2),
                        note="a 1-year term for a 48-day job",
                        parts=(OptionPart("aws-use1", "p5.48xlarge", "H100", 512, "reserved_1y", 64, 0,
                                          64 * 1152.0, 0, 1, round(P5_R1 * 64 * HOURS * 12, 2)),)),
            # the 8 owned nodes and 56 bought ones (56 x 10.2 kW x 1.3 = 743 kW of the 1200)
            Alternative(site="fra-dc1", instance="dgx-h100", gpu="H100", gpus=512,
                        pricing="purchase", cost_usd=15_340_000.0,
                        delta_usd=round(15_340_000.0 - cost, 2),
                        parts=(OptionPart("fra-dc1", "dgx-h100", "H100", 512, "purchase", 64, 8, 64 * 1152.0,
                                          0, 1, 15_340_000.0, "infiniband-ndr"),)),
        ),
    )


def _chat(replicas: int) -> WorkloadPlan:
    nodes = replicas * 2 // 8                  # 2 GPUs per replica, 8 per node
    aws_cost = round(P5_R1 * nodes * HOURS * 34, 2)               # reserved from month 2
    fra_cost = round(POWER_NODE_HOUR * nodes * HOURS * 34, 2)     # owned: power only
    cost = round(aws_cost + fra_cost, 2)
    return WorkloadPlan(
        name="chat-70b", kind="inference", gpu="H100", gpus=4 * replicas, replicas=2 * replicas,
        layout=LayoutPlan(tp=2, pp=1, dp=1, ep=1),
        placements=(
            Placement(site="aws-use1", instance="p5.48xlarge", pricing="reserved_1y",
                      nodes=nodes, gpus=replicas * 2, replicas=replicas,
                      candidate="chat-70b/aws-use1/p5.48xlarge/tp2", gpus_per_replica=2,
                      holdings=(_held("reserved_1y", nodes, {m: HOURS for m in range(2, HORIZON)}),),
                      monthly_replicas=_months(2, HORIZON, replicas)),
            Placement(site="fra-dc1", instance="dgx-h100", pricing="owned",
                      nodes=nodes, gpus=replicas * 2, replicas=replicas,
                      candidate="chat-70b/fra-dc1/dgx-h100+ethernet-100g/tp2", gpus_per_replica=2,
                      holdings=(_held("owned", nodes, {m: HOURS for m in range(2, HORIZON)}),),
                      monthly_replicas=_months(2, HORIZON, replicas)),
        ),
        estimate=EstimateFigures(memory_gb_per_gpu=71.2, tokens_per_s=1500.0 * 2 * replicas,
                                 ttft_ms=412.0, tpot_ms=21.3, batch=32),
        cost_usd=cost, orchestrator="kubernetes", start_month=2,
        alternatives=(
            Alternative(site="aws-use1", instance="g6e.48xlarge", gpu="L40S", gpus=4,
                        pricing="reserved_1y", cost_usd=round(cost * 1.31, 2),
                        delta_usd=round(cost * 0.31, 2), note="fp8 weights need 4 x L40S per replica"),
            Alternative(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus=2,
                        pricing="on_demand", cost_usd=round(cost * 1.58, 2),
                        delta_usd=round(cost * 0.58, 2)),
        ),
    )


def _resnet(moved: bool, horizon: int = HORIZON) -> WorkloadPlan:
    if moved:
        placement = Placement(site="aws-use1", instance="p5.48xlarge", pricing="spot",
                              nodes=1, gpus=8, replicas=0, candidate="resnet50/aws-use1/p5.48xlarge/8g/spot",
                              holdings=(_held("spot", 1, {1: 26.0}, horizon),))
        cost, alts = round(P5_SPOT * 1 * 26.0, 2), ()
        hours = 26.0          # 8 % checkpoint/restart overhead on spot
    else:
        placement = Placement(site="fra-dc1", instance="dgx-h100", pricing="owned",
                              nodes=1, gpus=8, replicas=0,
                              candidate="resnet50/fra-dc1/dgx-h100+infiniband-ndr/8g/od",
                              holdings=(_held("owned", 1, {1: 24.0}, horizon),))
        cost, hours = round(POWER_NODE_HOUR * 24.0, 2), 24.0
        alts = (Alternative(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus=8,
                            pricing="spot", cost_usd=round(P5_SPOT * 26.0, 2),
                            delta_usd=round(P5_SPOT * 26.0 - cost, 2)),)
    return WorkloadPlan(
        name="resnet50", kind="training", gpu="H100", gpus=8,
        layout=LayoutPlan(tp=1, pp=1, dp=8, ep=1), placements=(placement,),
        estimate=EstimateFigures(memory_gb_per_gpu=22.5, duration_hours=hours, mfu=0.35,
                                 samples_per_s=round(1281167 * 90 / (hours * 3600), 1)),
        cost_usd=cost, orchestrator="slurm", start_month=1, alternatives=alts)


def _pools(replicas: int, resnet_moved: bool) -> tuple[Pool, ...]:
    chat_nodes = replicas * 2 // 8
    fra_used = tuple(
        (chat_nodes if m >= 2 else 0) + (1 if (m == 1 and not resnet_moved) else 0)
        for m in range(HORIZON))
    chat_hours = {m: chat_nodes * HOURS for m in range(2, HORIZON)}
    pools = [
        Pool(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus_per_node=8, nodes=64,
             pricing="on_demand", fabric="efa", monthly_nodes=_months(0, 2, 64),
             monthly_utilization=_months(0, 2, 1.0, 0.0),
             monthly_node_hours=_hours({0: 64 * HOURS, 1: 64 * 422.0})),
        Pool(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus_per_node=8,
             nodes=chat_nodes, pricing="reserved_1y", fabric="efa",
             monthly_nodes=_months(2, HORIZON, chat_nodes),
             # replicas grow with traffic; the reserved nodes are held from month 2 on
             monthly_utilization=tuple(0.0 if m < 2 else round(min(1.0, 0.52 * 1.02 ** (m - 2)), 4)
                                       for m in range(HORIZON)),
             monthly_node_hours=_hours(chat_hours),
             reservations=tuple(Reservation(a, chat_nodes) for a in (2, 14, 26))),
        Pool(site="fra-dc1", instance="dgx-h100", gpu="H100", gpus_per_node=8, nodes=8,
             pricing="owned", fabric="infiniband-ndr", monthly_nodes=fra_used,
             monthly_utilization=tuple(round(n / 8, 4) for n in fra_used),
             monthly_node_hours=_hours({**chat_hours, **({} if resnet_moved else {1: 24.0})})),
    ]
    if resnet_moved:
        pools.append(Pool(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus_per_node=8,
                          nodes=1, pricing="spot", fabric="efa", monthly_nodes=_months(1, 2, 1),
                          monthly_utilization=_months(1, 2, 1.0, 0.0),
                          monthly_node_hours=_hours({1: 26.0})))
    return tuple(sorted(pools, key=lambda p: (p.site, p.instance, p.pricing)))


def _plan(replicas: int, resnet_moved: bool, sha: str, binding: tuple[str, ...]) -> Plan:
    workloads = (_chat(replicas), _pretrain(), _resnet(resnet_moved))
    storage = (StoragePlan(site="aws-use1", tier="fsx-lustre", capacity_tb=48.0, cost_usd=82_944.0,
                           monthly_tb=_months(0, 2, 48.0, 0.0)),
               StoragePlan(site="fra-dc1", tier="onprem-lustre", capacity_tb=10.0, cost_usd=21_000.0,
                           monthly_tb=_months(0, HORIZON, 10.0)))
    chat = workloads[0]
    aws_chat = chat.placements[0]
    cloud = workloads[1].cost_usd + P5_R1 * aws_chat.nodes * HOURS * 34
    if resnet_moved:
        cloud += workloads[2].cost_usd
    power = (POWER_NODE_HOUR * chat.placements[1].nodes * HOURS * 34
             + (0.0 if resnet_moved else workloads[2].cost_usd))
    breakdown = {
        "capex": 0.0,
        "cloud_compute": round(cloud, 2),
        "egress": 3_600.0,                                    # 40 TB at 0.09 $/GB leaves AWS
        "fabric": 0.0,
        "power": round(power, 2),
        "storage": round(sum(s.cost_usd for s in storage), 2),
        "support": round(38_000 * 8 * 3, 2),                  # DGX support on the owned nodes
    }
    total = round(sum(breakdown.values()), 2)
    # what each site bills: the cloud and its storage and the egress of data leaving it at AWS;
    # power, support (of the owned DGX) and storage at the data centre
    by_site = {"aws-use1": {"cloud_compute": breakdown["cloud_compute"], "egress": breakdown["egress"],
                            "storage": storage[0].cost_usd},
               "fra-dc1": {"power": breakdown["power"], "storage": storage[1].cost_usd,
                           "support": breakdown["support"]}}
    monthly = tuple(round(total / HORIZON, 2) for _ in range(HORIZON))
    return Plan(
        spec_name="acme-ml-platform", spec_sha256=sha, catalog_version="2026.11",
        horizon_months=HORIZON,
        solver=SolverInfo(name="cbc", status="optimal", objective_usd=total,
                          best_bound_usd=round(total * 0.9995, 2), gap=0.0005, seconds=3.42),
        total_cost_usd=total, cost_breakdown_usd=CostBreakdown.of(breakdown),
        cost_by_site_usd=tuple(SiteCost(s, CostBreakdown.of(c)) for s, c in by_site.items()), sites=_sites(),
        pools=_pools(replicas, resnet_moved), workloads=workloads, storage=storage,
        binding_constraints=tuple(BindingConstraint.read(b) for b in binding), monthly_cost_usd=monthly,
        breakeven=tuple(BreakEven(**b) for b in ({
            "gpu": "H100", "on_prem_site": "fra-dc1", "on_prem_instance": "dgx-h100",
            "on_prem_basis": "owned", "on_prem_fabric": "",
            "cloud_site": "aws-use1", "cloud_instance": "p5.48xlarge", "cloud_pricing": "on_demand",
            # owned: power only, 10.2 kW * 1.3 * 0.15 $ * 730 h / 8; 55.04 $/h / 8 * 730 h
            "on_prem_capex_usd_per_gpu": 0.0,
            "on_prem_opex_usd_per_gpu_month": 181.5,
            "cloud_usd_per_gpu_month": 5_022.4,
            "breakeven_months": 0.0,
            "breakeven_utilization": 0.0,
            "note": "chat-70b, resnet50 could run on H100 both at fra-dc1 and in the cloud",
        }, {
            "gpu": "H100", "on_prem_site": "fra-dc1", "on_prem_instance": "dgx-h100",
            "on_prem_basis": "purchase", "on_prem_fabric": "",
            "cloud_site": "aws-use1", "cloud_instance": "p5.48xlarge", "cloud_pricing": "reserved_1y",
            # 380,000 $ / 8 GPUs; (10.2 kW * 1.3 * 0.15 $ * 730 h + 38,000 $/12) / 8
            "on_prem_capex_usd_per_gpu": 47_500.0,
            "on_prem_opex_usd_per_gpu_month": 577.33,
            # 39.6288 $/h / 8 * 730 h
            "cloud_usd_per_gpu_month": 3_616.13,
            # 47,500 / (3,616.13 - 577.33)
            "breakeven_months": 15.63,
            # (47,500 * 36/60 + 577.33 * 36) / (3,616.13 * 36)
            "breakeven_utilization": 0.3786,
            "note": "capex credited for 36 of 60 months of useful life",
        },)),
    )


def hybrid_plan() -> Plan:
    return _plan(16, False, SHA_A, (
        "power[fra-dc1]: new nodes at fra-dc1 are limited by power_kw 1200 ($.sites[1].power_kw)",
        "survive[chat-70b@035/-aws-use1]: chat-70b must carry its peak without aws-use1 "
        "($.workloads[1].slo.availability)",
        "survive[chat-70b@035/-fra-dc1]: chat-70b must carry its peak without fra-dc1 "
        "($.workloads[1].slo.availability)",
    ))


def doubled_inference_plan() -> Plan:
    return _plan(32, True, SHA_B, (
        "capacity[fra-dc1/dgx-h100@035]: chat-70b takes all 64 owned H100 at fra-dc1 "
        "($.sites[1].owned)",
        "power[fra-dc1]: new nodes at fra-dc1 are limited by power_kw 1200 ($.sites[1].power_kw)",
        "survive[chat-70b@035/-fra-dc1]: chat-70b must carry its peak without fra-dc1 "
        "($.workloads[1].slo.availability)",
    ))


def vision_only_plan() -> Plan:
    """A small cloud-only plan: one vision job, no inference, no break-even, empty monthly series."""
    wl = _resnet(True, horizon=3)
    return Plan(
        spec_name="vision", spec_sha256="0" * 64, catalog_version="2026.11", horizon_months=3,
        solver=SolverInfo(name="highs", status="optimal", objective_usd=wl.cost_usd,
                          best_bound_usd=wl.cost_usd, gap=0.0, seconds=0.05),
        total_cost_usd=wl.cost_usd, cost_breakdown_usd=CostBreakdown(cloud_compute=wl.cost_usd),
        sites=(SitePlan(name="aws-use1", type="cloud", provider="aws", region="us-east-1",
                        orchestrators=("slurm",)),),
        pools=(Pool(site="aws-use1", instance="p5.48xlarge", gpu="H100", gpus_per_node=8, nodes=1,
                    pricing="spot", fabric="efa"),),
        workloads=(wl,))


ALL = {"hybrid": hybrid_plan, "doubled": doubled_inference_plan, "vision": vision_only_plan}
