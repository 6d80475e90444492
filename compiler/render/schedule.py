"""schedule/<site>.csv and schedule/<site>.sh: the plan's months made operational.

The CSV lists, span by span, the nodes each orchestrator holds and each service's replicas
(docs/artifacts.md). The script applies one month of it: `schedule/<site>.sh MONTH` applies the
site's Terraform with the month's variables file (terraform/<site>/months/NNN.tfvars: the
reservations and node groups of that month), scales every service to the plan's replicas and
sets its HPA bounds, and hands the nodes that change owner between Slurm and Kubernetes (drain
on one side, resume on the other). Every month's state is complete, so running a month twice,
or after a missed one, converges on the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.render.environment import render_template
from compiler.render.site import SiteView
from compiler.render.terraform import TerraformSite

# The month's state is applied on the first day of each month (the CronJob; ci/schedule.yml too).
CRON = "0 6 1 * *"


@dataclass(frozen=True)
class MonthState:
    first: int
    last: int
    replicas: tuple[tuple[str, int], ...]     # (Deployment or LeaderWorkerSet, replicas)
    owners: tuple[tuple[str, str], ...]       # (node, slurm | kubernetes | idle)
    tfvars: str = ""                          # Terraform's month file in force ("": none to apply)


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


def terraform_months(site: SiteView, tf: TerraformSite | None) -> tuple[str, ...]:
    """The month file in force in each month, where the site's Terraform (`tf`: None on-prem)
    changes after month 0 (a folder that never changes is applied once, by the runbook); ()
    otherwise."""
    if tf is None or not tf.monthly:
        return ()
    return tuple(next(f.path for f in reversed(tf.months) if f.month <= m) for m in range(site.horizon_months))


def month_states(site: SiteView, tf: TerraformSite | None) -> tuple[MonthState, ...]:
    files = terraform_months(site, tf)
    states: list[MonthState] = []
    for m in range(site.horizon_months):
        replicas = tuple((svc.object_name, svc.monthly_replicas[m] if m < len(svc.monthly_replicas) else 0)
                         for svc in site.inference)
        owners = node_owners(site, m)
        tfvars = files[m] if files else ""
        if states and (states[-1].replicas, states[-1].owners, states[-1].tfvars) == (replicas, owners, tfvars):
            states[-1] = MonthState(states[-1].first, m, replicas, owners, tfvars)
        else:
            states.append(MonthState(m, m, replicas, owners, tfvars))
    return tuple(states)


def configmap_name(site: SiteView) -> str:
    """The ConfigMap the CronJob reads the script and month 0 from (the runbook creates it)."""
    return f"schedule-{site.name}"


@dataclass(frozen=True)
class ScheduleSite:
    """schedule/<site>.* as they are rendered: the month states, and which files they make. The
    render writes the files from it, and RUNBOOK.md and ci/schedule.yml read it."""

    site: SiteView
    states: tuple[MonthState, ...]

    @property
    def groups(self) -> frozenset[str]:
        """The services whose replicas are LeaderWorkerSet groups (a replica over several nodes):
        the script scales that object, not a Deployment."""
        return frozenset(svc.object_name for svc in self.site.inference if svc.multi_node)

    @property
    def script(self) -> bool:
        """schedule/<site>.sh is written: some month scales a service, hands a node over or
        applies a Terraform month file."""
        return any(s.replicas or s.owners or s.tfvars for s in self.states)

    @property
    def terraform(self) -> bool:
        """The script applies the site's Terraform month files (terraform_month)."""
        return any(s.tfvars for s in self.states)

    @property
    def cronjob(self) -> bool:
        """schedule/<site>.cronjob.yaml is written. In the cluster only where the script drives
        Kubernetes alone: a node handover runs scontrol, which a pod cannot, and a month's
        Terraform needs the site's cloud credentials and state backend, which belong to CI, not
        to a pod in the cluster it resizes (the CI job runs those)."""
        return self.script and not any(s.owners or s.tfvars for s in self.states)


def schedule_site(site: SiteView, tf: TerraformSite | None) -> ScheduleSite:
    return ScheduleSite(site, month_states(site, tf))


def render_site(sched: ScheduleSite) -> dict[str, str]:
    site = sched.site
    out = {f"schedule/{site.name}.csv": render_template("schedule/schedule.csv.j2", rows=site.schedule,
                                                               calendar=site.calendar)}
    if sched.script:
        out[f"schedule/{site.name}.sh"] = render_template(
            "schedule/apply.sh.j2", site=site, states=sched.states, terraform=sched.terraform, groups=sched.groups)
    if sched.cronjob:
        out[f"schedule/{site.name}.cronjob.yaml"] = render_template(
            "schedule/cronjob.yaml.j2", site=site, configmap=configmap_name(site), cron=CRON, groups=sched.groups)
    return out
