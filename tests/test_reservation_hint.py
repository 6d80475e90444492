"""E218's hint for a held reservation of an instance the site's region does not sell: the regions
that do sell it and the instances of the same GPU sold in the site's region, not a guess by
spelling (p5.48xlarge in Frankfurt was once answered "did you mean 'g6.48xlarge'?", an L4 machine).

What the hint should say is read here straight from the bundled YAML files, not through the
catalog loader the check uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compiler import pipeline
from compiler.cli import app
from catalog_data import sold_instances
from compiler.diagnostics import CompileError
from compiler.semantic import SHOWN


SPEC = """\
apiVersion: infra-compile/v1
name: held
start: 2027-01
horizon_months: 12
sites:
  - name: here
    type: cloud
    provider: PROVIDER
    region: REGION
    pricing: [on_demand, reserved_1y]
    reserved:
      - {instance: INSTANCE, nodes: 2, until: 2027-07}
policy:
  placement: cloud
workloads:
  - name: chat
    kind: inference
    model: llama-3-70b
    traffic: {peak_rps: 5, input_tokens: 1000, output_tokens: 250}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}
"""


@pytest.fixture(scope="module")
def sold() -> dict[str, dict]:
    return sold_instances()


def _spec(tmp_path: Path, provider: str, region: str, instance: str) -> Path:
    path = tmp_path / "held.yaml"
    path.write_text(SPEC.replace("PROVIDER", provider).replace("REGION", region).replace("INSTANCE", instance),
                    encoding="utf-8")
    return path


def e218(tmp_path: Path, provider: str, region: str, instance: str):
    with pytest.raises(CompileError) as err:
        pipeline.validate(_spec(tmp_path, provider, region, instance))
    (d,) = [d for d in err.value.diagnostics if d.code == "E218"]
    assert d.path == ("sites", 0, "reserved", 0, "instance")
    assert d.message == f"a reservation of '{instance}' at {region}: the catalog does not sell it there"
    return d


def same_gpu_here(sold: dict, instance: str, provider: str, region: str) -> list[str]:
    gpu = sold[instance]["gpu"]
    return sorted(n for n, r in sold.items()
                  if r["provider"] == provider and r["gpu"] == gpu and region in r["regions"])


def listed_regions(hint: str, instance: str) -> tuple[list[str], int]:
    """The regions the hint names for `instance`, and how many more it says there are."""
    m = re.search(rf"the catalog sells {re.escape(instance)} in (.*?)(?: and (\d+) more)?(?: \(`[^`]*` lists them\))?;",
                  hint)
    assert m, hint
    return m.group(1).split(", "), int(m.group(2) or 0)


def test_p5_in_frankfurt_names_where_p5_is_sold_and_that_no_h100_is_sold_there(tmp_path, sold):
    d = e218(tmp_path, "aws", "eu-central-1", "p5.48xlarge")
    where = sold["p5.48xlarge"]["regions"]
    assert "eu-central-1" not in where and len(where) > SHOWN       # the case the hint must cut short
    shown, more = listed_regions(d.hint, "p5.48xlarge")
    # every region named sells it, none twice, and the count of the rest adds up
    assert set(shown) <= where and len(shown) == len(set(shown)) == SHOWN and len(shown) + more == len(where)
    # the regions near Frankfurt (eu-*) come first, each group alphabetically
    near = sorted(r for r in where if r.startswith("eu-"))
    assert near and shown == (near + sorted(where - set(near)))[:SHOWN]
    assert "`infra-compile catalog --provider aws --gpu H100 --section regions` lists them" in d.hint
    assert same_gpu_here(sold, "p5.48xlarge", "aws", "eu-central-1") == []
    assert d.hint.endswith("; no aws instance with H100 is sold in eu-central-1")
    # no guess by spelling: the L4 machine is not offered in place of the H100 one
    assert "did you mean" not in d.hint and "g6" not in d.hint


def test_the_rendered_error_keeps_its_place_and_format(tmp_path):
    path = _spec(tmp_path, "aws", "eu-central-1", "p5.48xlarge")
    r = CliRunner().invoke(app, ["validate", str(path)], catch_exceptions=False)
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    head = next(i for i, line in enumerate(lines) if "error[E218]" in line)
    assert lines[head] == (f"{path}:12:20: error[E218] at $.sites[0].reserved[0].instance: a reservation of "
                           "'p5.48xlarge' at eu-central-1: the catalog does not sell it there")
    assert lines[head + 3].startswith("   hint: the catalog sells p5.48xlarge in eu-")


def test_instances_of_the_same_gpu_sold_in_the_region_are_named(tmp_path, sold):
    # the first (instance, region) the data gives where the instance is not sold but another of
    # its provider with the same GPU is, so the case stays tested as the data changes
    regions = sorted({r for rec in sold.values() for r in rec["regions"]})
    instance, region = next((n, r) for n in sorted(sold) for r in regions
                            if r not in sold[n]["regions"] and same_gpu_here(sold, n, sold[n]["provider"], r))
    provider, gpu = sold[instance]["provider"], sold[instance]["gpu"]
    d = e218(tmp_path, provider, region, instance)
    shown, more = listed_regions(d.hint, instance)
    assert set(shown) <= sold[instance]["regions"] and len(shown) + more == len(sold[instance]["regions"])
    alternatives = same_gpu_here(sold, instance, provider, region)
    assert d.hint.endswith(f"; {gpu} instances sold in {region}: {', '.join(alternatives[:SHOWN])}"
                           + (f" and {len(alternatives) - SHOWN} more" if len(alternatives) > SHOWN else ""))


def test_a_short_list_is_given_whole(tmp_path, sold):
    instance = next(n for n in sorted(sold) if sold[n]["provider"] == "azure" and sold[n]["gpu"] == "H100")
    region = next(r for r in sorted({r for rec in sold.values() if rec["provider"] == "azure" for r in rec["regions"]})
                  if r not in sold[instance]["regions"])
    d = e218(tmp_path, "azure", region, instance)
    shown, more = listed_regions(d.hint, instance)
    assert (sorted(shown), more) == (sorted(sold[instance]["regions"]), 0) and "lists them" not in d.hint


def test_another_providers_instance_names_its_provider_and_this_ones_same_gpu(tmp_path, sold):
    d = e218(tmp_path, "gcp", "us-central1", "p5.48xlarge")
    alternatives = same_gpu_here(sold, "p5.48xlarge", "gcp", "us-central1")
    assert alternatives      # GCP sells H100 machines in us-central1
    assert d.hint == ("p5.48xlarge is rented from aws, not gcp; "
                      f"H100 instances sold in us-central1: {', '.join(alternatives)}")


def test_a_typo_is_still_guessed(tmp_path, sold):
    # of an instance sold there: the guess and what the region sells, as before
    d = e218(tmp_path, "aws", "us-east-1", "p5.48xlargx")
    here = sorted(n for n, r in sold.items() if r["provider"] == "aws" and "us-east-1" in r["regions"])
    assert d.hint == f"did you mean 'p5.48xlarge'? aws instances sold in us-east-1: {', '.join(here)}"
    # of an instance not sold there: the guess, then where the guess is sold
    d = e218(tmp_path, "aws", "eu-central-1", "p5.48xlargx")
    assert d.hint.startswith("did you mean 'p5.48xlarge'? the catalog sells p5.48xlarge in eu-")
    # no guess at all: what the region sells
    d = e218(tmp_path, "aws", "eu-central-1", "zz9.plural")
    here = sorted(n for n, r in sold.items() if r["provider"] == "aws" and "eu-central-1" in r["regions"])
    assert d.hint == f"aws instances sold in eu-central-1: {', '.join(here)}"
