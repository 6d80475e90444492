"""The benchmark scripts stay runnable: their generated platforms are valid specs, and the
sweeps by workloads, sites and horizon run end to end on tiny platforms."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_pipeline  # noqa: E402
from bench_pipeline import MAX_SITES, SITES, platform_spec  # noqa: E402


@pytest.mark.parametrize("sites, horizon", [(2, 24), (len(SITES), 12), (MAX_SITES, 24), (MAX_SITES, 60)])
def test_every_sweep_point_is_a_valid_spec(tmp_path, sites, horizon):
    from compiler.pipeline import validate

    data = platform_spec(40, seed=2, horizon=horizon, sites=sites)
    assert [s["name"] for s in data["sites"]] == [s["name"] for s in (SITES + bench_pipeline.MORE_SITES)[:sites]]
    assert data["horizon_months"] == horizon
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    spec, _catalog, _doc = validate(path)
    assert len(spec.workloads) == 40 and len(spec.sites) == sites


def test_the_default_platform_is_unchanged_by_the_sweep_arguments():
    # README's figures were measured on platform_spec(n, seed): the defaults must give it.
    assert platform_spec(12, 5) == platform_spec(12, 5, horizon=24, sites=len(SITES))
    assert platform_spec(12, 5)["name"] == "bench-12-s5"
    assert platform_spec(12, 5, horizon=36)["name"] == "bench-12-s5-h36-k5"
    with pytest.raises(ValueError):
        platform_spec(3, 0, sites=1)


# Each compile is bounded by branch-and-bound nodes (--max-nodes), not by the clock: the same
# search on every machine, and a few seconds each. (Two sites' formulate alone took 26 s of the
# sites sweep: the lifting of the serving rows' cuts, compiler/optimize/cuts.py, on that platform.)
@pytest.mark.slow
@pytest.mark.parametrize("argv, label, values", [
    (["--sizes", "2", "3"], "N", ["2", "3"]),
    (["--sweep", "sites", "--workloads", "2", "--site-counts", "4", "3"], "sites", ["3", "4"]),
    (["--sweep", "horizon", "--workloads", "2", "--horizons", "6", "12"], "months", ["6", "12"]),
    (["--sizes", "3", "--long-jobs"], "N", ["3"]),
])
def test_each_sweep_runs_and_reports_every_point(capsys, argv, label, values):
    bench_pipeline.main([*argv, "--max-nodes", "10"])
    out = capsys.readouterr().out
    for v in values:
        assert f"{label}={v}: validate " in out
    assert f"x = growth against {label}={values[0]}" in out


def test_best_known_records_name_sweep_points_apart_and_keep_the_old_names():
    import best_known

    Point = best_known.Point
    assert Point(100, 0).key == "workloads-100-s0"            # the records of 2026-11-23 still match
    assert Point(30, 0, horizon=60).key == "workloads-30-s0-h60-k5"
    assert Point(30, 0, sites=6).key == "workloads-30-s0-h24-k6"
    assert Point(30, 0, 60, 5).described == "bench_pipeline.platform_spec(30, seed=0, horizon=60, sites=5)"
    assert Point(100, 0, horizon=36, two_dcs=True).key == "workloads-100-s0-h36-2dc"
    records = best_known.load()["platforms"]
    assert records and all(k.startswith("workloads-") for k in records)
    assert all(r["cost_usd"] >= r["best_bound_usd"] - 0.01 for r in records.values())   # a plan never beats a bound


def test_the_two_data_centre_platform_is_the_one_issue_16_describes():
    # AWS in two regions, GCP, Azure and two data centres
    data = platform_spec(40, seed=2, horizon=36, two_dcs=True)
    kinds = [(s["type"], s.get("provider")) for s in data["sites"]]
    assert kinds.count(("cloud", "aws")) == 2 and ("cloud", "gcp") in kinds and ("cloud", "azure") in kinds
    assert kinds.count(("on_prem", None)) == 2 and len(kinds) == 6
    assert data["name"] == "bench-40-s2-h36-2dc" and data["horizon_months"] == 36
    assert len(data["workloads"]) == 40
    assert data == platform_spec(40, seed=2, horizon=36, two_dcs=True)          # seeded: the same spec


def test_the_long_jobs_platform_has_the_sizes_and_windows_teams_run():
    # jobs of 1e11 to 2e12 tokens in windows of 14 to 120 days, each ending inside the horizon
    data = platform_spec(100, seed=0, horizon=36, two_dcs=True, long_jobs=True)
    assert data["name"] == "bench-100-s0-h36-2dc-long"
    llm = [w for w in data["workloads"] if w["kind"] == "training" and "tokens" in w]
    assert llm and all(1e11 <= w["tokens"] <= 2e12 for w in llm)
    days = {w["window"]["deadline_days"] for w in llm}
    assert min(days) == 14 and max(days) == 120
    assert all(w["window"]["start_month"] * 30 + w["window"]["deadline_days"] <= 36 * 30 for w in llm)
    assert data == platform_spec(100, seed=0, horizon=36, two_dcs=True, long_jobs=True)    # seeded
    import best_known

    point = best_known.Point(100, 0, horizon=36, two_dcs=True, long_jobs=True)
    assert point.key == "workloads-100-s0-h36-2dc-long"
    assert point.key in best_known.load()["platforms"]
    assert point.described == "bench_pipeline.platform_spec(100, seed=0, horizon=36, two_dcs=True, long_jobs=True)"


def test_a_catalog_figure_no_candidate_carries_makes_the_records_stale():
    """The records' catalog fingerprint changes with a figure the model prices beyond the
    candidates (a storage tier's capex: the on-prem NFS tier once changed every data centre's
    problem and left the candidates' fingerprint equal), and not with provenance (version,
    sources, as_of dates, notes), which changes no problem."""
    from dataclasses import replace
    from types import MappingProxyType

    import best_known

    from compiler.pipeline import load_catalog

    catalog = load_catalog()
    fp = best_known.catalog_fingerprint(catalog)
    nfs = catalog.storage["onprem-nfs"]
    dearer = replace(catalog, storage=MappingProxyType({**catalog.storage,
                                                       "onprem-nfs": replace(nfs, capex_usd_per_tb=nfs.capex_usd_per_tb + 1)}))
    assert best_known.catalog_fingerprint(dearer) != fp
    without = replace(catalog, storage=MappingProxyType({k: v for k, v in catalog.storage.items() if k != "onprem-nfs"}))
    assert best_known.catalog_fingerprint(without) != fp
    renamed = replace(catalog, version="9999.1", sources=MappingProxyType({
        k: replace(s, as_of="2031-01-01", note="read again") for k, s in catalog.sources.items()}),
        storage=MappingProxyType({**catalog.storage, "onprem-nfs": replace(nfs, source="another-source")}))
    assert best_known.catalog_fingerprint(renamed) == fp

    record = {"fingerprint": "c0ffee", "catalog": fp}
    assert best_known.other_problem(record, {"fingerprint": "c0ffee", "catalog": fp}) is None
    assert "another catalog" in best_known.other_problem(record, {"fingerprint": "c0ffee", "catalog": "other"})
    assert "other estimates" in best_known.other_problem(record, {"fingerprint": "beef", "catalog": fp})
    # a record made before the catalog was fingerprinted: only the candidates' fingerprint tells
    assert best_known.other_problem({"fingerprint": "c0ffee"}, {"fingerprint": "c0ffee", "catalog": "other"}) is None


def test_a_price_row_in_a_region_no_site_uses_leaves_the_records_of_a_spec_standing():
    """With the spec's cloud regions given, only price rows there count: a row or an instance
    added elsewhere (a new region for the catalog) is no figure of the spec's problem, while a
    figure changed in one of its regions is; an instance's unset nvlink_domain_gpus counts as the
    field's absence, so adding the optional field changed no record."""
    from dataclasses import replace
    from types import MappingProxyType

    import best_known

    from compiler.pipeline import load_catalog

    catalog = load_catalog()
    regions = {("aws", "us-east-1"), ("gcp", "us-central1")}
    fp = best_known.catalog_fingerprint(catalog, regions=regions)
    p5 = catalog.instances["p5.48xlarge"]
    row = p5.price_row("us-east-1")

    def with_p5(prices):
        return replace(catalog, instances=MappingProxyType({**catalog.instances, "p5.48xlarge": replace(p5, prices=prices)}))

    elsewhere = with_p5(p5.prices + (replace(row, region="sa-east-1"),))
    assert best_known.catalog_fingerprint(elsewhere, regions=regions) == fp
    assert best_known.catalog_fingerprint(elsewhere) != best_known.catalog_fingerprint(catalog)
    dearer = with_p5(tuple(replace(r, on_demand=r.on_demand + 1) if r.region == "us-east-1" else r for r in p5.prices))
    assert best_known.catalog_fingerprint(dearer, regions=regions) != fp
    only_elsewhere = replace(catalog, instances=MappingProxyType({**catalog.instances, "x.big": replace(
        p5, name="x.big", prices=(replace(row, region="sa-east-1"),))}))
    assert best_known.catalog_fingerprint(only_elsewhere, regions=regions) == fp
    assert p5.nvlink_domain_gpus is None
    racked = with_p5(p5.prices)
    racked = replace(racked, instances=MappingProxyType({**catalog.instances, "p5.48xlarge": replace(p5, nvlink_domain_gpus=16)}))
    assert best_known.catalog_fingerprint(racked, regions=regions) != fp


def test_a_serving_factor_a_spec_never_reads_leaves_its_records_standing():
    """A spec serving no MoE model never reads the expert-parallel factor, and a spec whose services
    are sized on no MI300X never reads MI300X's one-GPU serving efficiencies: changing them leaves
    its records standing, while a spec that reads them (moe_serving, serving_gpus naming MI300X)
    sees a new problem, as it does for a factor every service reads."""
    import best_known

    from compiler.pipeline import load_catalog

    from calibration import with_factors

    catalog = load_catalog()
    fp = best_known.catalog_fingerprint(catalog, moe_serving=False, serving_gpus={"H100"})
    moved = with_factors(catalog, ep_copy_bytes_per_hidden=catalog.factor("ep_copy_bytes_per_hidden") + 10,
                         ep_decode_overlap=catalog.factor("ep_decode_overlap") - 0.5,
                         **{"prefill_efficiency.MI300X.tp1": catalog.factor("prefill_efficiency.MI300X.tp1") + 0.1})
    assert best_known.catalog_fingerprint(moved, moe_serving=False, serving_gpus={"H100"}) == fp
    assert best_known.catalog_fingerprint(moved, moe_serving=True, serving_gpus={"H100"}) != \
        best_known.catalog_fingerprint(catalog, moe_serving=True, serving_gpus={"H100"})
    assert best_known.catalog_fingerprint(moved, moe_serving=False, serving_gpus={"MI300X"}) != \
        best_known.catalog_fingerprint(catalog, moe_serving=False, serving_gpus={"MI300X"})
    plain = with_factors(catalog, prefill_efficiency=catalog.factor("prefill_efficiency") + 0.1)
    assert best_known.catalog_fingerprint(plain, moe_serving=False, serving_gpus={"H100"}) != fp


def test_a_record_keeps_the_cheapest_plan_of_its_own_problem(tmp_path, monkeypatch):
    """best_known.keep: a run replaces the record where it is cheaper or of another problem; a
    record without the catalog's fingerprint gives way to a run as cheap that has it, and lends it
    no bound (its bound may be of another catalog); between runs of one catalog the best bound
    seen is kept."""
    import json

    import best_known

    records = tmp_path / "best_known.json"
    monkeypatch.setattr(best_known, "RECORDS", records)
    monkeypatch.setattr(best_known, "commit", lambda: "abc")
    point = best_known.Point(10)

    def run(cost, bound, catalog="A"):
        best_known.keep(point, {"fingerprint": "f", "catalog": catalog},
                        {"total_cost_usd": cost, "solver": {"best_bound_usd": bound, "status": "feasible"}}, "m", 1.0)
        return json.loads(records.read_text())["platforms"][point.key]

    records.write_text(json.dumps({"platforms": {point.key: {"fingerprint": "f", "cost_usd": 100.0,
                                                             "best_bound_usd": 90.0}}}))
    legacy = run(110.0, 80.0)
    assert (legacy["cost_usd"], legacy["best_bound_usd"], "catalog" in legacy) == (100.0, 90.0, False)
    upgraded = run(100.0, 80.0)
    assert (upgraded["cost_usd"], upgraded["best_bound_usd"], upgraded["catalog"]) == (100.0, 80.0, "A")
    kept = run(105.0, 85.0)
    assert (kept["cost_usd"], kept["best_bound_usd"]) == (100.0, 85.0)
    cheaper = run(95.0, 82.0)
    assert (cheaper["cost_usd"], cheaper["best_bound_usd"]) == (95.0, 85.0)
    other = run(120.0, 60.0, catalog="B")
    assert (other["cost_usd"], other["best_bound_usd"], other["catalog"]) == (120.0, 60.0, "B")
