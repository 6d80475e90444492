"""A re-plan's runbook removes what the new plan dropped: applying the new plan's files leaves
the baseline's Kubernetes objects running, so RUNBOOK.md deletes each one by the name the
baseline's own files gave it (oracle: the baseline's rendered manifests, read with a YAML
parser), and tears down a site the new plan no longer uses."""

from __future__ import annotations

import re
from dataclasses import replace

import yaml

import subprocess

from compiler.catalog import load_catalog
from compiler.render import render
from plans import split_plan, workload
from test_runbook import _code_blocks, _site_section, _tool

# The kinds of a service's routing file (31-route-<service>.yaml), as `kubectl delete` is to name
# them: the CRD kinds by their full resource names (the inference extension's CRDs hold an
# InferencePool of each of two groups), the built-in kinds by their plain ones.
RESOURCE = {"HTTPRoute": "httproutes.gateway.networking.k8s.io",
            "InferencePool": "inferencepools.inference.networking.k8s.io",
            "Gateway": "gateways.gateway.networking.k8s.io"}


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


def _routing(files: dict[str, str], site: str = "") -> set[tuple[str, str, str]]:
    """(namespace, resource, name) of every object of the routing files (29-gateway.yaml,
    31-route-*.yaml), of one site or all."""
    out = set()
    for path, text in files.items():
        if (path.startswith(f"kubernetes/{site}") and path.endswith(".yaml")
                and ("/31-route-" in path or path.endswith("/29-gateway.yaml"))):
            for doc in yaml.safe_load_all(text):
                if doc:
                    out.add((doc["metadata"]["namespace"], RESOURCE.get(doc["kind"], doc["kind"].lower()),
                             doc["metadata"]["name"]))
    return out


def _deleted(runbook: str) -> set[tuple[str, str, str]]:
    """(namespace, resource, name) of every object the runbook's shell blocks delete: each
    `kubectl -n NS delete KIND,KIND NAME` line deletes NAME of each kind."""
    out = set()
    for block in _code_blocks(runbook, "sh"):
        for ns, kinds, name in re.findall(r"^kubectl -n (\S+) delete (\S+) (\S+) --ignore-not-found$", block, re.M):
            out |= {(ns, k, name) for k in kinds.split(",") if "/" not in k}
    return out


def _shellcheck(runbook: str, tmp_path) -> None:
    blocks = _code_blocks(runbook, "sh")
    script = tmp_path / "runbook.sh"
    script.write_text("#!/bin/bash\n" + "\n".join(blocks) + "\n")
    out = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


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
    # `chat` is still routed here (its pool selects the replacing Deployment): no routing object goes
    assert not _deleted(runbook) & _routing(render(base, catalog))


def test_a_dropped_services_routing_is_deleted_by_the_baselines_names(tmp_path):
    catalog = load_catalog()
    base = split_plan()
    head = replace(base, workloads=tuple(w for w in base.workloads if w.name != "chat"))
    was, now = render(base, catalog), render(head, catalog)
    routed = _routing(was)
    # the oracle: every object of the baseline's routing files (its 31-route-chat.yaml: HTTPRoute,
    # InferencePool and the endpoint picker's six objects; the Gateway, no service being left)
    assert {k for _, k, _ in routed} >= {"httproutes.gateway.networking.k8s.io",
                                         "inferencepools.inference.networking.k8s.io", "deployment",
                                         "service", "configmap", "role", "rolebinding", "serviceaccount",
                                         "gateways.gateway.networking.k8s.io"}
    assert not _routing(now)
    runbook = render(head, catalog, base)["RUNBOOK.md"]
    deleted = _deleted(runbook)
    assert routed <= deleted
    # and nothing the new plan's files create
    kept = {(d["metadata"].get("namespace"), RESOURCE.get(d["kind"], d["kind"].lower()), d["metadata"]["name"])
            for p, t in now.items() if p.startswith("kubernetes/") and p.endswith(".yaml")
            for d in yaml.safe_load_all(t) if d}
    assert not deleted & kept
    section = runbook.split("Remove what this plan dropped", 1)[1]
    assert "31-route-<service>.yaml" in section and "`kubectl -n split-platform get deployment chat-epp`" in section
    _shellcheck(runbook, tmp_path)


def _chat_also_at_usw2(base):
    """`base` with a second site, aws-usw2, whose g6e.48xlarge pool runs one more chat placement."""
    extra = replace(base.sites[0], name="aws-usw2", region="us-west-2")
    return replace(base, sites=base.sites + (extra,),
                   pools=base.pools + tuple(replace(p, site="aws-usw2") for p in base.pools
                                            if p.instance == "g6e.48xlarge"),
                   workloads=tuple(replace(w, placements=w.placements + tuple(
                       replace(p, site="aws-usw2") for p in w.placements[:1])) if w.name == "chat" else w
                       for w in base.workloads))


def test_a_service_dropped_from_one_site_loses_its_routing_there_only():
    catalog = load_catalog()
    base = split_plan()
    wider = _chat_also_at_usw2(base)
    narrower = replace(wider, workloads=tuple(
        replace(w, placements=tuple(p for p in w.placements if p.site != "aws-usw2")) if w.name == "chat" else w
        for w in wider.workloads))
    runbook = render(narrower, catalog, wider)["RUNBOOK.md"]
    was = render(wider, catalog)
    # the sites are two clusters of the same namespace: each site's section deletes its own
    assert _routing(was, "aws-usw2") <= _deleted(_site_section(runbook, "aws-usw2"))
    assert not _deleted(_site_section(runbook, "aws-use1"))


def test_nothing_is_deleted_without_a_drop():
    catalog = load_catalog()
    base = split_plan()
    assert "Remove what this plan dropped" not in render(base, catalog, base)["RUNBOOK.md"]
    assert "delete deployment" not in render(base, catalog)["RUNBOOK.md"]


def test_a_site_the_new_plan_no_longer_uses_is_torn_down():
    catalog = load_catalog()
    base = split_plan()
    wider = _chat_also_at_usw2(base)
    runbook = render(base, catalog, wider)["RUNBOOK.md"]
    section = runbook.split("Site aws-usw2: in the baseline, not in this plan", 1)[1]
    assert "terraform -chdir=terraform/aws-usw2 destroy" in section
    names = _deployments(render(wider, catalog))
    usw2 = {v for k, v in names.items() if "/aws-usw2/" in k}
    assert usw2 and all(f"kubectl -n {ns} delete deployment,service,horizontalpodautoscaler,"
                        f"poddisruptionbudget {n} --ignore-not-found" in section for ns, n in usw2)
    routed = _routing(render(wider, catalog), "aws-usw2")
    assert routed and routed <= _deleted(section)
    # the sections after it are numbered on
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", runbook, re.M)]
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_baseline_placement_on_no_pool_of_its_own_is_named_not_deleted():
    # a hand-edited baseline: `chat` placed on g6e.48xlarge, a pool the baseline no longer holds.
    # Its site view cannot name what chat ran (render/domains.domain_of found no pool: KeyError),
    # so the runbook names the placement for ops to find by hand, and removes the rest as before.
    catalog = load_catalog()
    split = split_plan()
    base = replace(split, pools=tuple(p for p in split.pools if p.instance != "g6e.48xlarge"))
    assert any(p.instance == "g6e.48xlarge" for p in workload(base, "chat").placements)
    head = replace(split, workloads=tuple(w for w in split.workloads if w.name != "chat"))
    runbook = render(head, catalog, base)["RUNBOOK.md"]
    section = runbook.split("Remove what this plan dropped", 1)[1]
    assert "Not deleted: the baseline places `chat` on `g6e.48xlarge` here, but holds no pool" in section
    assert "chat on g6e.48xlarge: the baseline holds no pool of it here" in _site_section(runbook, "aws-use1")
    assert not _deleted(runbook)                      # no name is guessed
    # where this plan runs the workload there, nothing is named
    assert "Not deleted" not in render(split, catalog, base)["RUNBOOK.md"]
