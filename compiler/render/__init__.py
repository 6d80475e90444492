"""The render stage: a Plan (+ the catalog's hardware figures) -> artifact files.

    render(plan, catalog, baseline=None) -> {relative path: text}

site.py builds each site's view (its scheduling domains, from domains.py, storage, jobs and
services); one module per target (terraform, slurm, kubernetes, onprem) turns it into files
from templates/<target>/, and schedule.py says who holds which nodes month by month (a CSV, a
script that applies a month, and a CronJob that runs it); runbook.py writes ci/schedule.yml and
RUNBOOK.md, how to apply all of it, from the same views the files were written from (each built
once per site; the runbook never reads a rendered file back). A re-plan's baseline (the plan
deployed before it) changes RUNBOOK.md only: it then says what changes against it (changes.py);
the other files are the plan's, whatever was deployed before.
docs/artifacts.md is the contract the files keep. plan.json and the report are written by
other stages. The output is sorted and holds no timestamps: the same plan renders the same
bytes.
"""

from __future__ import annotations

import re

from compiler.catalog.model import Catalog
from compiler.diagnostics import CompileError, Diagnostic
from compiler.plan import Plan
from compiler.render import edge, kubernetes, onprem, runbook, schedule, slurm, terraform
from compiler.render.changes import changes
from compiler.render.site import site_view

# The spec's name pattern; names become directory names, node names and identifiers, so
# the renderer refuses anything else even if a caller skipped validation.
SAFE_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")

__all__ = ["render"]


def _check_names(plan: Plan) -> None:
    bad = [("site", s.name) for s in plan.sites if not SAFE_NAME.match(s.name)]
    bad += [("workload", w.name) for w in plan.workloads if not SAFE_NAME.match(w.name)]
    if bad:
        raise CompileError([Diagnostic(
            code="E701", message=f"{kind} name {name!r} cannot be rendered safely",
            hint="names must match ^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$") for kind, name in bad])


def render(plan: Plan, catalog: Catalog, baseline: Plan | None = None) -> dict[str, str]:
    _check_names(plan)
    files: dict[str, str] = {}
    sites = []
    for view in (site_view(plan, catalog, site) for site in sorted(plan.sites, key=lambda s: s.name)):
        # Each target's view is built once: its files are rendered from it, and the runbook reads it.
        tf = terraform.terraform_site(view, catalog) if view.cloud else None
        sl = slurm.slurm_site(view, catalog) if view.uses("slurm") else None
        k8s = kubernetes.kubernetes_site(view) if view.uses("kubernetes") else None
        sched = schedule.schedule_site(view, tf)
        if tf is not None:
            files.update(terraform.render_site(tf))
        else:
            files.update(onprem.render_site(view, catalog))
        if sl is not None:
            files.update(slurm.render_site(sl))
        if k8s is not None:
            files.update(kubernetes.render_site(k8s))
        files.update(schedule.render_site(sched))
        sites.append(runbook.SiteFiles(view, tf, sl, k8s, sched))
    fleets = edge.fleets(plan, catalog, (s.view for s in sites))     # edge sites: boxes per location
    for fleet in fleets:
        files.update(edge.render_fleet(fleet, plan))
    files.update(runbook.workflow(plan, tuple(sites)))
    delta = None if baseline is None else changes(plan, baseline)
    files.update(runbook.render(plan, catalog, tuple(sites), delta, baseline, fleets))
    return dict(sorted(files.items()))
