"""Capacity blocks beyond AWS's plain instances (docs/capacity-blocks.md): AWS P6e-GB200, whose
blocks are whole UltraServers, and GCP's future reservations in calendar mode.

P6e-GB200: a block is one u-p6e-gb200x72 UltraServer of 18 p6e-gb200.36xlarge instances, paid for
all 18 at $42.328 an instance-hour (the recorded pricing page's $761.904 an hour over 18), whatever
the job uses of it (capacity_block_ultraserver.aws.p6e-gb200.36xlarge.u-p6e-gb200x72 = 18).

GCP calendar mode (capacity_block_days.gcp.*, capacity_block_instances.gcp.per_block: the calendar
mode page's rules): whole days from 1 to 90, at most 80 VMs a request, no limit across requests. No
rate is bundled (none could be read: calendar mode is charged at Dynamic Workload Scheduler prices),
so a GCP site that lists capacity_block is refused (E223) until an overlay gives one; the tests
below give a3-megagpu-8g in us-central1 $60.00 an instance-hour (its on-demand row: $92.50).
"""

from __future__ import annotations

import math

import pytest

from compiler import pipeline, unit_costs
from compiler.audit import audit
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.pipeline import CompileOptions

CAT = load_catalog()

P6E = """\
apiVersion: infra-compile/v1
name: cb-p6e
horizon_months: 3
start: 2027-03
sites:
  - {{name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand, capacity_block]}}
policy: {{placement: cloud}}
workloads:
  - name: pretrain
    kind: training
    model: {model}
    tokens: {tokens}
    window: {{start_month: 0, deadline_days: 30}}
    orchestrator: slurm
    pin: {{instance: p6e-gb200.36xlarge, gpus: {gpus}}}
"""

GCP = """\
apiVersion: infra-compile/v1
name: cal-gcp
horizon_months: 3
start: 2027-03
sites:
  - {name: gcp-usc1, type: cloud, provider: gcp, region: us-central1, pricing: [on_demand, capacity_block]}
policy: {placement: cloud}
workloads:
  - name: pretrain
    kind: training
    model: llama-3-8b
    tokens: 2.5e11
    window: {start_month: 0, deadline_days: 30}
    orchestrator: slurm
    pin: {instance: a3-megagpu-8g, gpus: 16}
"""

QUOTE = """\
sources:
  test-calendar-quote:
    title: "A test: a calendar-mode quote for a3-megagpu-8g in us-central1"
    url: "https://example.com/quote"
    as_of: "2026-11-28"
factors:
  - {name: capacity_block_usd_per_hour.gcp.us-central1.a3-megagpu-8g, value: 60.0, source: test-calendar-quote}
"""


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- the rules, per provider

def test_each_provider_has_its_own_block_lengths_and_sizes():
    # AWS: whole days to 14, whole weeks to 182; GCP calendar mode: whole days to 90
    assert unit_costs.capacity_block_days(CAT, 29.5 * 24, "aws") == 35
    assert unit_costs.capacity_block_days(CAT, 29.5 * 24, "gcp") == 30
    assert unit_costs.capacity_block_days(CAT, 91 * 24, "aws") == 91
    assert unit_costs.capacity_block_days(CAT, 90 * 24, "gcp") == 90
    assert unit_costs.capacity_block_days(CAT, 90.5 * 24, "gcp") is None
    # AWS: 64 instances a block, 256 across an account's; GCP: 80 VMs a request, no account limit
    assert unit_costs.capacity_block_count(CAT, 100, "aws", "p5en.48xlarge") == 2
    assert unit_costs.capacity_block_count(CAT, 300, "aws", "p5en.48xlarge") is None
    assert unit_costs.capacity_block_count(CAT, 100, "gcp", "a3-megagpu-8g") == 2
    assert unit_costs.capacity_block_count(CAT, 1000, "gcp", "a3-megagpu-8g") == 13


def test_p6e_blocks_are_whole_ultraservers():
    assert unit_costs.capacity_block_ultraserver(CAT, "aws", "p6e-gb200.36xlarge") == ("u-p6e-gb200x72", 18)
    assert unit_costs.capacity_block_ultraserver(CAT, "aws", "p5en.48xlarge") is None
    for nodes, billed, blocks in ((1, 18, 1), (16, 18, 1), (18, 18, 1), (19, 36, 2), (54, 54, 3)):
        assert unit_costs.capacity_block_billed(CAT, "aws", "p6e-gb200.36xlarge", nodes) == billed
        assert unit_costs.capacity_block_count(CAT, nodes, "aws", "p6e-gb200.36xlarge") == blocks
    # 256 instances across an account's blocks: 14 UltraServers are 252, 15 are 270
    assert unit_costs.capacity_block_count(CAT, 252, "aws", "p6e-gb200.36xlarge") == 14
    assert unit_costs.capacity_block_count(CAT, 253, "aws", "p6e-gb200.36xlarge") is None


# ---------------------------------------------------------------- P6e-GB200 UltraServers

def test_a_job_on_a_whole_ultraserver_buys_one_and_the_runbook_asks_for_the_ultraserver(tmp_path):
    path = _write(tmp_path, "p6e.yaml", P6E.format(model="llama-3-70b", tokens="1.0e11", gpus=72))
    res = pipeline.compile_spec(path)
    [b] = res.plan.capacity_blocks
    rate = CAT.factors["capacity_block_usd_per_hour.aws.us-east-1.p6e-gb200.36xlarge"].value
    assert (b.instance, b.nodes, b.blocks, b.usd_per_hour) == ("p6e-gb200.36xlarge", 18, 1, rate)
    assert b.days == math.ceil(res.plan.workloads[0].estimate.duration_hours / 24)
    assert b.cost_usd == pytest.approx(rate * 18 * 24 * b.days, abs=0.01)
    assert audit(res.candidates.spec, res.candidates.catalog, res.candidates, res.plan) == []
    runbook = res.artifacts["RUNBOOK.md"]
    assert f"| pretrain | aws-use1 (us-east-1) | p6e-gb200.36xlarge | 18 (1 x u-p6e-gb200x72) | {b.days} |" in runbook
    assert ("aws ec2 describe-capacity-block-offerings --region us-east-1 --ultraserver-type u-p6e-gb200x72 \\\n"
            f"  --ultraserver-count 1 --capacity-duration-hours {b.days * 24}") in runbook
    assert "--instance-type p6e-gb200.36xlarge" not in runbook


def test_a_job_on_a_few_instances_pays_a_whole_ultraserver_so_runs_on_demand(tmp_path):
    """Four instances on a block would pay for 18: $42.328 x 18 = $761.90 an hour against four on
    demand at the $56.9664 estimate ($227.87): no block."""
    path = _write(tmp_path, "p6e-small.yaml", P6E.format(model="llama-3-8b", tokens="3.0e10", gpus=16))
    plan = pipeline.compile_spec(path).plan
    assert plan.capacity_blocks == ()
    assert {p.pricing for p in plan.pools} == {"on_demand"}


# ---------------------------------------------------------------- GCP calendar mode

def test_gcp_calendar_mode_has_no_bundled_rate_so_a_site_listing_it_is_refused(tmp_path):
    with pytest.raises(CompileError) as info:
        pipeline.compile_spec(_write(tmp_path, "cal.yaml", GCP))
    [d] = [d for d in info.value.diagnostics if d.code == "E223"]
    assert "the catalog sells no Capacity Block in gcp us-central1" in d.message
    assert not any(k.startswith("capacity_block_usd_per_hour.gcp.") for k in CAT.factors)


def test_a_gcp_job_with_a_quoted_rate_reserves_whole_days_and_the_runbook_requests_them(tmp_path):
    quote = _write(tmp_path, "quote.yaml", QUOTE)
    res = pipeline.compile_spec(_write(tmp_path, "cal.yaml", GCP), CompileOptions(catalog=str(quote)))
    [w] = res.plan.workloads
    [b] = res.plan.capacity_blocks
    days = math.ceil(w.estimate.duration_hours / 24)          # whole days: no rounding up to weeks
    assert (b.site, b.instance, b.nodes, b.blocks, b.days, b.usd_per_hour) == (
        "gcp-usc1", "a3-megagpu-8g", 2, 1, days, 60.0)
    assert b.cost_usd == pytest.approx(60.0 * 2 * 24 * days, abs=0.01)
    on_demand = res.candidates.catalog.instances["a3-megagpu-8g"].price("us-central1", "on_demand")
    assert b.cost_usd < on_demand * 2 * w.estimate.duration_hours
    assert audit(res.candidates.spec, res.candidates.catalog, res.candidates, res.plan) == []
    runbook = res.artifacts["RUNBOOK.md"]
    assert "Calendar-mode reservations to request (GCP future reservations in calendar mode)" in runbook
    assert "Capacity Blocks to buy (AWS" not in runbook
    assert (f"gcloud compute advice calendar-mode --region=us-central1 --machine-type=a3-megagpu-8g \\\n"
            f"  --vm-count=2 --duration-range=min={days}d,max={days}d \\\n"
            f"  --start-time-range=from=2027-03-01T00:00:00Z,to=2027-03-{31 - days:02d}T00:00:00Z") in runbook
    assert (f"gcloud compute future-reservations create pretrain-gcp-usc1-1 --zone=ZONE \\\n"
            f"  --machine-type=a3-megagpu-8g --total-count=2 \\\n"
            f"  --start-time=2027-03-01T00:00:00Z --end-time=2027-03-{1 + days:02d}T00:00:00Z \\\n"
            f"  --reservation-mode=CALENDAR --deployment-type=DENSE \\\n"
            f"  --auto-delete-auto-created-reservations --planning-status=SUBMITTED") in runbook
    report = res.artifacts["report.md"]
    assert "GCP future reservations in calendar mode: each holds" in report and "paid for all of it" in report
