"""Recurring training (window.every): one workload for a job that runs again and again.

The oracle for its cost is the same work stated the old way, one workload per run: a weekly
fine-tune over 24 months compiled both ways spends the same on compute (the runs land on the same
pool), and no more on storage (one job keeps one set of checkpoints; runs stated apart keep one
each in a month they share)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from compiler import recurrence
from compiler.recurrence import Period

SPEC = {
    "apiVersion": "infra-compile/v1",
    "name": "weekly",
    "start": "2027-01",
    "horizon_months": 24,
    "sites": [{"name": "aws-use1", "type": "cloud", "provider": "aws", "region": "us-east-1"}],
    "workloads": [{"name": "weekly-finetune", "kind": "training", "model": "llama-3-8b", "tokens": 2.0e9,
                   "window": {"every": "7d", "deadline_days": 3}}],
}


def test_a_weekly_job_over_24_months_is_104_runs():
    # 24 months of 730 h = 17,520 h; runs start every 168 h while start + 72 h <= 17,520:
    # k <= (17,520 - 72) / 168 = 103.9, so k = 0..103: 104 runs (two years of weeks).
    starts = recurrence.run_starts(Period.parse("7d"), 0, 3, 24)
    assert len(starts) == 104 and starts[-1] == 103 * 168
    # Month 0 (hours 0-730) holds the runs at 0, 168, 336, 504 and 672 h; month 1 those at
    # 840 ... 1,344 h (four: the next, 1,512, is past 1,460).
    by_month = recurrence.runs_by_month(starts)
    assert (by_month[0], by_month[1]) == (5, 4) and sum(by_month.values()) == 104


def test_a_run_longer_than_a_month_spills_as_a_one_time_job_does():
    # A yearly run of 1,000 h from hour 0: 730 h in month 0, 270 h in month 1.
    starts = recurrence.run_starts(Period.parse("12mo"), 0, 60, 24)
    assert starts == (0.0, 8760.0)
    assert recurrence.usage(starts, 1000.0) == ((0, 730.0), (1, 270.0), (12, 730.0), (13, 270.0))


def test_periods_and_their_cron_schedules():
    assert Period.parse("7d").cron == "0 0 * * 1" and Period.parse("1d").cron == "0 0 * * *"
    assert Period.parse("1mo").cron == "0 0 1 * *" and Period.parse("3mo").cron == "0 0 1 */3 *"
    assert not Period.parse("5d").cron_states and not Period.parse("5mo").cron_states
    assert Period.parse("7x") is None and Period.parse("0d") is None


def _compile(tmp_path, spec: dict, name: str):
    from compiler.pipeline import CompileOptions, compile_spec

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return compile_spec(path, CompileOptions())


def _separate(spec: dict) -> dict:
    """The recurring job as one workload per run, each in the month its run starts."""
    w = spec["workloads"][0]
    runs = recurrence.run_starts(Period.parse(w["window"]["every"]), 0, w["window"]["deadline_days"],
                                 spec["horizon_months"])
    ws = [{"name": f"run-{k:03d}", "kind": "training", "model": w["model"], "tokens": w["tokens"],
           "window": {"start_month": int(t // 730), "deadline_days": w["window"]["deadline_days"]}}
          for k, t in enumerate(runs)]
    return {**spec, "name": "separate", "workloads": ws}


@pytest.mark.slow
def test_one_recurring_workload_costs_what_its_104_runs_cost(tmp_path):
    one = _compile(tmp_path, SPEC, "weekly")
    apart = _compile(tmp_path, _separate(SPEC), "separate")
    assert len(apart.plan.workloads) == 104
    w = one.plan.workloads[0]
    assert (w.every, w.runs) == ("7d", 104)
    for r in (one, apart):
        assert r.plan.solver.status == "optimal"
    compute = [r.plan.cost_breakdown_usd.cloud_compute for r in (one, apart)]
    assert compute[0] == pytest.approx(compute[1], rel=max(one.plan.solver.gap, apart.plan.solver.gap) + 1e-9)
    assert one.plan.cost_breakdown_usd.storage <= apart.plan.cost_breakdown_usd.storage + 1e-6
    # one placement: every run on the same nodes; its node-hours are the 104 runs'
    (p,) = w.placements
    hours = sum(sum(h.monthly_node_hours) for h in p.holdings)
    assert hours == pytest.approx(104 * p.nodes * w.estimate.duration_hours, rel=1e-4)
    # one report line, one launcher per orchestrator
    report = one.artifacts["report.md"]
    assert sum("weekly-finetune runs as" in line for line in report.splitlines()) == 1
    assert "weekly: 104 runs" in report
    assert [f for f in one.artifacts if f.endswith(".scrontab")] == ["slurm/aws-use1/jobs/weekly-finetune.scrontab"]
    # named by calendar month from the spec's start
    assert "2027-01..2028-12" in one.artifacts["slurm/aws-use1/jobs/weekly-finetune.scrontab"]


@pytest.mark.slow
def test_the_audit_rederives_the_runs(tmp_path):
    from compiler.audit import audit, codes

    r = _compile(tmp_path, SPEC, "weekly")
    cands = r.candidates
    (p,) = r.plan.workloads[0].placements
    # a candidate that bills one run fewer than the spec's weeks hold: the audit counts the runs itself
    def short(c):
        last = c.usage[-1]
        return replace(c, usage=c.usage[:-1] + ((last[0], last[1] - c.estimate.duration_hours),))
    bad = {w: tuple(short(c) if c.id == p.candidate else c for c in cs) for w, cs in cands.by_workload.items()}
    findings = audit(cands.spec, cands.catalog, replace(cands, by_workload=bad), r.plan)
    assert codes.RUNS in {f.code for f in findings}, findings
    assert not [f for f in audit(cands.spec, cands.catalog, cands, r.plan) if f.code == codes.RUNS]
