"""A reserved term already held (bought before the plan: the spec's `reserved`, a baseline's
terms; a reservation whose term starts before month 0) is adopted by Terraform through an
`import` block whose id is a variable, never created a second time: one reservation resource per
block, the import targeting it, on AWS (the hashicorp/aws provider has no capacity reservation
data source to look one up), GCP and Azure. Checked with python-hcl2 and, for AWS, `terraform
validate` as tests/test_render_terraform.py runs it."""

from __future__ import annotations

import subprocess

import hcl2
import pytest

from compiler.catalog import load_catalog
from compiler.plan import Pool, Reservation, SitePlan
from compiler.render import render
from plans import _plan, training, write
from test_render_terraform import MIRROR, _terraform_env, needs_terraform, plain

# (provider, region, instance, GPU, GPUs per node, fabric, the reservation resource)
CASES = {
    "aws": ("us-east-1", "p5.48xlarge", "H100", 8, "efa", "aws_ec2_capacity_reservation"),
    "gcp": ("us-central1", "a3-highgpu-8g", "H100", 8, "gpudirect-tcpx", "google_compute_reservation"),
    "azure": ("eastus", "Standard_ND96isr_H100_v5", "H100", 8, "infiniband", "azurerm_capacity_reservation"),
}


def _plan_with_held(provider: str, held: bool = True):
    region, inst, gpu, gpus, fabric, _ = CASES[provider]
    site = SitePlan(f"{provider}-x", "cloud", provider, region, ("slurm",))
    # 2 nodes held since 3 months before the plan, 1 more bought in month 2
    terms = (Reservation(-3, 2), Reservation(2, 1)) if held else (Reservation(0, 2), Reservation(2, 1))
    pool = Pool(site.name, inst, gpu, gpus, 3, "reserved_1y", fabric, (2, 2) + (3,) * 10, (1.0,) * 12,
                (1460.0,) * 12, terms)
    job = training("pretrain", site.name, inst, "reserved_1y", 3, 3 * gpus, tp=gpus, gpu=gpu)
    return _plan(f"held-{provider}", sites=[site], pools=[pool], workloads=[job], storage=[])


def _main(provider: str, held: bool = True) -> tuple[dict, dict[str, str]]:
    files = render(_plan_with_held(provider, held), load_catalog())
    site = f"{provider}-x"
    return plain(hcl2.loads(files[f"terraform/{site}/main.tf"])), files


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_held_term_is_imported_not_created_again(provider):
    resource = CASES[provider][-1]
    main, files = _main(provider)
    created = [name for block in main["resource"] for name in block.get(resource, {})]
    assert len(created) == 1, created          # one reservation per block, held or bought
    imports = main.get("import", [])
    targets = {i["to"]: i["id"] for i in imports}
    assert f"${{{resource}.{created[0]}[0]}}" in targets or f"{resource}.{created[0]}[0]" in targets, targets
    assert any("var.held_reservation_ids" in str(v) for v in targets.values())
    variables = plain(hcl2.loads(files[f"terraform/{provider}-x/variables.tf"]))
    names = {n for block in variables["variable"] for n in block}
    assert "held_reservation_ids" in names
    assert ">= 1.6.0" in files[f"terraform/{provider}-x/versions.tf"]
    if provider == "azure":
        # the group that holds it is adopted too
        assert any("azurerm_capacity_reservation_group" in t for t in targets)


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_plan_that_holds_nothing_imports_nothing(provider):
    main, files = _main(provider, held=False)
    assert "import" not in main
    assert "held_reservation_ids" not in files[f"terraform/{provider}-x/variables.tf"]


@needs_terraform
@pytest.mark.skipif(not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
                    reason="no hashicorp/aws provider mirror under /opt/tf-plugins")
def test_terraform_validates_the_import_aws(tmp_path):
    files = render(_plan_with_held("aws"), load_catalog())
    folder = tmp_path / "aws-x"
    write({p.split("/", 2)[2]: t for p, t in files.items() if p.startswith("terraform/aws-x/")}, folder)
    env = _terraform_env(tmp_path)
    for args in (["init", "-backend=false", "-input=false", "-no-color"], ["validate", "-no-color"],
                 ["fmt", "-check", "-diff"]):
        out = subprocess.run(["terraform", *args], cwd=folder, capture_output=True, text=True, timeout=180, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
