"""A re-plan's runbook removes what the new plan dropped: applying the new plan's files leaves
the baseline's Kubernetes objects running, so RUNBOOK.md deletes each one by the name the
baseline's own files gave it (oracle: the baseline's rendered manifests, read with a YAML
parser), and tears down a site the new plan no longer uses."""

from __future__ import annotations

import re
from dataclasses import replace

import yaml

from compiler.catalog import load_catalog
from compiler.render import render
from plans import split_plan, workload
from test_runbook import _code_blocks


def _dropped_layout(plan):
    """The plan with `chat`'s second layout (2 replicas of 4 GPUs) dropped: its replicas on the first."""
    chat = workload(plan, "chat")
    first = replace(chat.placements[0], replicas=6, monthly_replicas=(6,) * plan.horizon_months)
    return replace(plan, workloads=tuple(replace(w, placements=(first,)) if w.name == "chat" else w
                                         for w in plan.workloads))


def _deployments(files: dict[str, str]) -> dict[str, tuple[str, str]]:
    """file -> (namespace, name) of each serving Deployment the files hold (not the endpoint
    pickers of the routing files)."""
    out = {}
    for path, text in files.items():
        if path.startswith("kubernetes/") and "/30-serve-" in path and path.endswith(".yaml"):
            for doc in yaml.safe_load_all(text):
                if doc and doc.get("kind") == "Deployment":
                    out[path] = (doc["metadata"]["namespace"], doc["metadata"]["name"])
    return out


def test_a_dropped_layouts_deployment_is_deleted_by_the_baselines_name():
    catalog = load_catalog()
    base = split_plan()
    head = _dropped_layout(base)
    was, now = _deployments(render(base, catalog)), _deployments(render(head, catalog))
    gone = set(was.values()) - set(now.values())
    assert len(gone) == 2 and len(now) == 1          # both suffixed names go; `chat` alone replaces them
    runbook = render(head, catalog, base)["RUNBOOK.md"]
    assert "Remove what this plan dropped" in runbook
    deletes = re.findall(r"^kubectl -n (\S+) delete deployment,service,horizontalpodautoscaler,"
                         r"poddisruptionbudget (\S+) --ignore-not-found$", runbook, re.M)
    assert sorted(deletes) == sorted(gone)
    # what runs on is not deleted
    assert not set(deletes) & set(now.values())


def test_nothing_is_deleted_without_a_drop():
    catalog = load_catalog()
    base = split_plan()
    assert "Remove what this plan dropped" not in render(base, catalog, base)["RUNBOOK.md"]
    assert "delete deployment" not in render(base, catalog)["RUNBOOK.md"]


def test_a_site_the_new_plan_no_longer_uses_is_torn_down():
    catalog = load_catalog()
    base = split_plan()
    extra = replace(base.sites[0], name="aws-usw2", region="us-west-2")
    wider = replace(base, sites=base.sites + (extra,),
                    pools=base.pools + tuple(replace(p, site="aws-usw2") for p in base.pools
                                             if p.instance == "g6e.48xlarge"),
                    workloads=tuple(replace(w, placements=w.placements + tuple(
                        replace(p, site="aws-usw2") for p in w.placements[:1])) if w.name == "chat" else w
                        for w in base.workloads))
    runbook = render(base, catalog, wider)["RUNBOOK.md"]
    section = runbook.split("Site aws-usw2: in the baseline, not in this plan", 1)[1]
    assert "terraform -chdir=terraform/aws-usw2 destroy" in section
    names = _deployments(render(wider, catalog))
    usw2 = {v for k, v in names.items() if "/aws-usw2/" in k}
    assert usw2 and all(f"kubectl -n {ns} delete deployment,service,horizontalpodautoscaler,"
                        f"poddisruptionbudget {n} --ignore-not-found" in section for ns, n in usw2)
    # the sections after it are numbered on
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", runbook, re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
