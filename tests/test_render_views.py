"""The views each site's files are rendered from, which RUNBOOK.md reads instead of the files
(compiler/render/runbook.py's SiteFiles), say what the files hold: read here from the files with
real parsers (python-hcl2, PyYAML), sharing no code with the render. Terraform: variables.tf's
variables (their descriptions and which have a default), main.tf's resources and what a first
`terraform plan` adds, each month file's maps; Kubernetes: the files of kubernetes/<site>/ and
each HorizontalPodAutoscaler's metric; the schedule: which of its files are written and whether
the script applies Terraform month files. Over the hand-made plans, dated and undated, and the
plans that import reservations held already on every provider."""

from __future__ import annotations

from dataclasses import replace

import hcl2
import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.render import kubernetes, render, schedule, terraform
from compiler.render.site import site_view
from plans import PLANS
from test_render_held import CASES as HELD, _plan_with_held
from test_render_terraform import at, plain

def _dated(make, start):
    return lambda: replace(make(), start=start)


def _held(provider):
    return lambda: _plan_with_held(provider, True)


PLAN_CASES = {**{case: PLANS[case] for case in PLANS},
              **{f"{case}-dated": _dated(PLANS[case], "2027-11") for case in PLANS},
              **{f"held-{p}": _held(p) for p in HELD},
              **{f"held-{p}-dated": _dated(_held(p), "2028-02") for p in HELD}}


@pytest.fixture(scope="module", params=sorted(PLAN_CASES))
def case(request):
    """(files, {site: (SiteView, TerraformSite | None, KubernetesSite | None, ScheduleSite)})."""
    catalog = load_catalog()
    plan = PLAN_CASES[request.param]()
    views = {}
    for s in plan.sites:
        view = site_view(plan, catalog, s)
        tf = terraform.terraform_site(view, catalog) if view.cloud else None
        views[s.name] = (view, tf, kubernetes.kubernetes_site(view) if view.uses("kubernetes") else None,
                         schedule.schedule_site(view, tf))
    return render(plan, catalog), views


def _blocks(text: str, kind: str) -> dict[str, dict]:
    return {k: v for block in plain(hcl2.loads(text)).get(kind, []) for k, v in block.items()}


def test_terraform_variables_are_those_variables_tf_declares(case):
    files, views = case
    for name, (_view, tf, _k, _s) in views.items():
        if tf is None:
            assert not any(p.startswith(f"terraform/{name}/") for p in files)
            continue
        declared = _blocks(files[f"terraform/{name}/variables.tf"], "variable")
        assert [v.name for v in tf.variables] == list(declared)
        for v in tf.variables:
            assert v.description == declared[v.name]["description"], v.name
            assert (v.default is not None) == ("default" in declared[v.name]), v.name


def test_terraform_resources_and_the_first_plan_are_what_main_tf_declares(case):
    files, views = case
    for name, (_view, tf, _k, _s) in views.items():
        if tf is None:
            continue
        doc = plain(hcl2.loads(files[f"terraform/{name}/main.tf"]))
        declared = [(f"{kind}.{label}", body) for block in doc.get("resource", [])
                    for kind, named in block.items() for label, body in named.items()]
        assert [r.address for r in tf.resources] == [a for a, _ in declared]
        month0 = files.get(f"terraform/{name}/months/000.tfvars")
        values = plain(hcl2.loads(month0)) if month0 else {}
        # a count read from a month map is 0 without a month file (`terraform plan` would ask for it)
        counts = [(at(c, values) if values else 0) if isinstance(c, str) else c
                  for c in (body.get("count", 1) for _a, body in declared)]
        assert [r.planned(tf.months[0] if tf.months else None) for r in tf.resources] == counts
        assert tf.planned_resources == sum(counts)


def test_each_month_files_maps_are_the_typed_months(case):
    files, views = case
    for name, (_view, tf, _k, _s) in views.items():
        if tf is None:
            continue
        written = sorted(p for p in files if p.startswith(f"terraform/{name}/months/"))
        assert written == [f"terraform/{name}/{m.path}" for m in tf.months]
        for m in tf.months:
            parsed = {k: v for k, v in plain(hcl2.loads(files[f"terraform/{name}/{m.path}"])).items()
                      if not k.startswith("__")}
            assert list(parsed) == list(m.variables)
            assert {n: {v.key: v.value for v in values} for n, values in m.maps} == parsed


def test_kubernetes_files_and_autoscalers_are_the_typed_manifests(case):
    files, views = case
    for name, (_view, _tf, k, _s) in views.items():
        written = sorted(p for p in files if p.startswith(f"kubernetes/{name}/"))
        if k is None:
            assert not written
            continue
        assert list(k.files) == written
        assert k.kueue == (f"kubernetes/{name}/10-kueue.yaml" in files)
        assert k.gateway == (f"kubernetes/{name}/29-gateway.yaml" in files)
        hpas = [(d["metadata"]["name"], m["pods"]["metric"]["name"]) for p in written
                for d in yaml.safe_load_all(files[p]) if d and d["kind"] == "HorizontalPodAutoscaler"
                for m in d["spec"]["metrics"]]
        assert sorted((a.name, a.metric) for a in k.autoscalers) == sorted(hpas)


def test_the_schedules_files_are_the_typed_schedule(case):
    files, views = case
    for name, (_view, _tf, _k, sched) in views.items():
        script = files.get(f"schedule/{name}.sh")
        assert sched.script == (script is not None)
        assert sched.cronjob == (f"schedule/{name}.cronjob.yaml" in files)
        assert sched.terraform == ("terraform_month " in (script or ""))
