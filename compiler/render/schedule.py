"""schedule/<site>.csv and schedule/<site>.sh: the plan's months made operational.

The CSV lists, span by span, the nodes each orchestrator holds and each service's replicas
(docs/artifacts.md). The script applies one month of it: `schedule/<site>.sh MONTH` scales every
service to the plan's replicas and sets its HPA bounds, and hands the nodes that change owner
between Slurm and Kubernetes (drain on one side, resume on the other). Every month's state is
complete, so running a month twice, or after a missed one, converges on the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.render.environment import render_template
from compiler.render.site import SiteView

# The month's state is applied on the first day of each month (the CronJob; ci/schedule.yml too).
CRON = "0 6 1 * *"


@dataclass(frozen=True)
class MonthState:
    first: int
    last: int
    replicas: tuple[tuple[str, int], ...]     # (Deployment, replicas)
    owners: tuple[tuple[str, str], ...]       # (node, slurm | kubernetes | idle)


def node_owners(site: SiteView, month: int) -> tuple[tuple[str, str], ...]:
    """Who holds each node that changes hands, in one month. In clouds such nodes are elastic on
    both sides (they start inside the reservation when needed), so nothing is handed over."""
    out: list[tuple[str, str]] = []
    if site.cloud:
        return ()
    for d in site.domains:
        for b in d.blocks:
            lo, hi = b.handover
            if not lo or lo > hi:
                continue
            out += [(name, b.owner(i, month)) for i, name in zip(range(lo, hi + 1), b.node_names(lo, hi))]
    return tuple(out)


def month_states(site: SiteView) -> tuple[MonthState, ...]:
    states: list[MonthState] = []
    for m in range(site.horizon_months):
        replicas = tuple((svc.object_name, svc.monthly_replicas[m] if m < len(svc.monthly_replicas) else 0)
                         for svc in site.inference)
        owners = node_owners(site, m)
        if states and (states[-1].replicas, states[-1].owners) == (replicas, owners):
            states[-1] = MonthState(states[-1].first, m, replicas, owners)
        else:
            states.append(MonthState(m, m, replicas, owners))
    return tuple(states)


def configmap_name(site: SiteView) -> str:
    """The ConfigMap the CronJob reads the script and month 0 from (the runbook creates it)."""
    return f"schedule-{site.name}"


def render_site(site: SiteView) -> dict[str, str]:
    out = {f"schedule/{site.name}.csv": render_template("schedule/schedule.csv.j2", rows=site.schedule)}
    states = month_states(site)
    if any(s.replicas or s.owners for s in states):
        out[f"schedule/{site.name}.sh"] = render_template("schedule/apply.sh.j2", site=site, states=states)
        # In the cluster only where the script drives Kubernetes alone: a node handover runs
        # scontrol, which a pod cannot (the CI job runs those, on a host that can).
        if not any(s.owners for s in states):
            out[f"schedule/{site.name}.cronjob.yaml"] = render_template(
                "schedule/cronjob.yaml.j2", site=site, configmap=configmap_name(site), cron=CRON)
    return out
