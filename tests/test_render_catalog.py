"""Every GPU machine the catalog sells, rendered: the accelerator type its provider needs, a serving
and a training image that run on its GPU, the GKE driver version its images need, and files that
pass the real validators.

One small Plan per provider (one site holding every instance of that provider, a reserved block
of three nodes each: one Slurm node, one Kubernetes node with a service on it and one with a
training job) and one on-prem Plan for the node models; nothing is compiled. Which image runs on
which GPU is judged here from the vLLM, NGC and ROCm release facts below, not from the catalog's
own image records.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import hcl2
import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.plan import Placement, Plan, Pool, SitePlan
from compiler.render import render
from compiler.render.common import slug
from plans import _plan, inference, training, write
from test_render_terraform import fmt_check, plain

K8S_VERSION = "1.30.0"

# What a serving image must be for each architecture: (image repository, first vLLM release that
# runs on it, first release that no longer does, or None).
# - vLLM runs on NVIDIA compute capability 7.0 and later (Volta, Turing, Ampere, Ada, Hopper).
# - Blackwell: v0.9.0's release notes (May 2025) moved the default build from CUDA 12.4 to 12.8
#   and ship the first Blackwell kernels, usable from the Docker image; earlier images have none.
# - Volta: v0.20.0's notes switch vllm/vllm-openai to CUDA 13.0, which no longer builds for it.
# - AMD CDNA: vllm/vllm-openai is a CUDA build; AMD publishes ROCm builds as rocm/vllm.
NVIDIA = "vllm/vllm-openai"
RELEASES = {
    "volta": (NVIDIA, (0, 1, 0), (0, 20, 0)),
    "turing": (NVIDIA, (0, 1, 0), None),
    "ampere": (NVIDIA, (0, 1, 0), None),
    "ada": (NVIDIA, (0, 1, 0), None),
    "hopper": (NVIDIA, (0, 1, 0), None),
    "blackwell": (NVIDIA, (0, 9, 0), None),
    "cdna3": ("rocm/vllm", (0, 4, 0), None),
}


def vllm_version(image: str) -> tuple[str, tuple[int, ...]]:
    """(repository, vLLM version) of an image reference: vllm/vllm-openai:v0.10.1.1 (or a CUDA
    build's tag, v0.19.1-cu130), or AMD's rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605."""
    repo, _, tag = image.rpartition(":")
    m = re.fullmatch(r"v(\d+(?:\.\d+)+)(?:-cu\d+)?", tag) or re.search(r"_vllm_(\d+(?:\.\d+)+)_", tag)
    assert repo and m, f"cannot read a vLLM version from {image!r}"
    return repo, tuple(int(x) for x in m.group(1).split("."))


def supports(architecture: str, image: str) -> bool:
    want, first, dropped = RELEASES[architecture]
    repo, version = vllm_version(image)
    return repo == want and version >= first and (dropped is None or version < dropped)


# What a training image must be for each architecture: (image repository, first release with
# kernels for it). NGC PyTorch releases are YY.MM: CUDA 11.0 (20.06) brought Ampere, CUDA 11.8
# (22.10) Hopper and Ada, CUDA 12.8 (25.01, the first NGC PyTorch release on it) Blackwell.
# AMD's rocm/pytorch images are tagged rocm<version>_...: ROCm 6.0 is the first with MI300X
# (gfx942); CUDA images do not run on AMD GPUs.
NGC = "nvcr.io/nvidia/pytorch"
TRAINING = {
    "volta": (NGC, (17, 12)),
    "turing": (NGC, (18, 12)),
    "ampere": (NGC, (20, 6)),
    "ada": (NGC, (22, 10)),
    "hopper": (NGC, (22, 10)),
    "blackwell": (NGC, (25, 1)),
    "cdna3": ("rocm/pytorch", (6, 0)),
}


def trains_on(architecture: str, image: str) -> bool:
    """Whether a training image has kernels for the architecture: nvcr.io/nvidia/pytorch:25.01-py3,
    rocm/pytorch:rocm7.1.1_ubuntu24.04_py3.12_pytorch_release_2.10.0."""
    want, first = TRAINING[architecture]
    repo, _, tag = image.rpartition(":")
    m = re.fullmatch(r"(\d+)\.(\d+)-py3", tag) if repo == NGC else re.match(r"rocm(\d+)\.(\d+)", tag)
    assert m, f"cannot read a release from {image!r}"
    return repo == want and (int(m.group(1)), int(m.group(2))) >= first


# The lowest NVIDIA driver each GKE gpu_driver_version is taken to install (GKE's driver pages:
# DEFAULT is R535 on older GKE versions; LATEST the newest branch of the node's version, 570 and
# later where GKE offers Blackwell machines).
GKE_DRIVER_FLOOR = {"DEFAULT": 535, "LATEST": 570}


def driver_need(text: str) -> int:
    """The driver branch an image says it needs: 'NVIDIA driver 570.26 or later' -> 570."""
    m = re.search(r"NVIDIA driver (\d+)", text)
    assert m, text
    return int(m.group(1))


def _everything_plan(name: str, site: SitePlan, machines: dict[str, tuple[str, int, str]],
                     pricing: str) -> Plan:
    """One site with every machine of `machines` (name -> GPU, GPUs per node, fabric): a block of
    three nodes each, a one-node Slurm job, a one-node Kubernetes job and a one-replica service on
    all of a node's GPUs."""
    pools, workloads = [], []
    for inst, (gpu, gpus, fabric) in sorted(machines.items()):
        pools.append(Pool(site.name, inst, gpu, gpus, 3, pricing, fabric))
        workloads.append(training(f"t-{slug(inst)}", site.name, inst, pricing, 1, gpus, tp=gpus, gpu=gpu))
        workloads.append(training(f"k-{slug(inst)}", site.name, inst, pricing, 1, gpus, tp=gpus, gpu=gpu,
                                  orchestrator="kubernetes"))
        workloads.append(inference(f"s-{slug(inst)}", [Placement(site.name, inst, pricing, 1, gpus, 1)],
                                   tp=gpus, gpu=gpu))
    return _plan(name, sites=[site], pools=pools, workloads=workloads, storage=[])


def plans() -> dict[str, Plan]:
    cat = load_catalog()
    out = {}
    for provider in sorted({i.provider for i in cat.instances.values()}):
        machines = {n: (i.gpu, i.gpus, i.fabric) for n, i in cat.instances.items() if i.provider == provider}
        region = cat.instances[sorted(machines)[0]].regions[0]
        site = SitePlan(f"{provider}-all", "cloud", provider, region, ("kubernetes", "slurm"))
        out[provider] = _everything_plan(f"catalog-{provider}", site, machines, "reserved_1y")
    nodes = {n: (o.gpu, o.gpus, o.fabrics[0]) for n, o in cat.onprem_nodes.items()}
    out["on_prem"] = _everything_plan("catalog-onprem", SitePlan("dc-all", "on_prem", None, None,
                                                                 ("kubernetes", "slurm")), nodes, "owned")
    return out


@lru_cache(maxsize=None)
def rendered() -> dict[str, dict[str, str]]:
    cat = load_catalog()
    return {case: render(plan, cat) for case, plan in plans().items()}


def _site(case: str) -> str:
    return "dc-all" if case == "on_prem" else f"{case}-all"


def _deployments(case: str) -> dict[str, dict]:
    """Service name -> its Deployment."""
    out = {}
    for path, text in rendered()[case].items():
        if "/30-serve-" in path:
            for doc in yaml.safe_load_all(text):
                if doc and doc["kind"] == "Deployment":
                    out[doc["metadata"]["name"]] = doc
    return out


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed")
    return found


# ---------------------------------------------------------------------------- the catalog's facts


def test_every_gpu_has_an_architecture_and_a_serving_image_that_supports_it():
    cat = load_catalog()
    for name, gpu in cat.gpus.items():
        assert gpu.architecture in RELEASES, f"{name}: architecture {gpu.architecture!r} has no release facts here"
        s = gpu.serving
        assert s is not None, f"{name} has no serving image"
        assert supports(gpu.architecture, s.ref), f"{name} ({gpu.architecture}) cannot run {s.ref}"
        assert s.runtime and s.driver and s.source in cat.sources
        assert cat.sources[s.source].as_of


def test_every_gpu_has_a_training_image_that_supports_it():
    cat = load_catalog()
    for name, gpu in cat.gpus.items():
        t = gpu.training
        assert t is not None, f"{name} has no training image"
        assert trains_on(gpu.architecture, t.ref), f"{name} ({gpu.architecture}) cannot train on {t.ref}"
        assert t.runtime and t.driver and t.source in cat.sources
        assert cat.sources[t.source].as_of


def test_every_gpu_gcp_sells_has_a_gke_driver_that_meets_its_images_need():
    cat = load_catalog()
    sold = {i.gpu for i in cat.instances.values() if i.provider == "gcp"}
    for name in sorted(sold):
        gpu = cat.gpus[name]
        assert gpu.gke_driver is not None and gpu.gke_driver.source in cat.sources, name
        need = max(driver_need(gpu.serving.driver), driver_need(gpu.training.driver))
        assert GKE_DRIVER_FLOOR[gpu.gke_driver.version] >= need, (name, gpu.gke_driver.version, need)


def test_every_gcp_machine_names_its_gpus_accelerator_type():
    cat = load_catalog()
    for name, inst in cat.instances.items():
        if inst.provider == "gcp":
            assert inst.accelerator is not None and inst.accelerator.source in cat.sources, name
            # GCP's names carry the GPU's model: nvidia-tesla-a100, nvidia-h100-mega-80gb, nvidia-b200
            model = inst.gpu.split("-")[0].lower()
            assert re.fullmatch(rf"nvidia-[a-z0-9-]*{model}[a-z0-9-]*", inst.accelerator_type), (name, inst.gpu)


def test_the_checks_tell_a_blackwell_image_from_an_older_one():
    assert not supports("blackwell", "vllm/vllm-openai:v0.6.3")
    assert supports("blackwell", "vllm/vllm-openai:v0.10.1.1")
    assert not supports("cdna3", "vllm/vllm-openai:v0.10.1.1")
    assert supports("cdna3", "rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605")
    assert not supports("volta", "vllm/vllm-openai:v0.20.0")
    # the training image the renderer hard-coded before: no Blackwell, CUDA only
    assert trains_on("hopper", "nvcr.io/nvidia/pytorch:24.07-py3")
    assert not trains_on("blackwell", "nvcr.io/nvidia/pytorch:24.07-py3")
    assert trains_on("blackwell", "nvcr.io/nvidia/pytorch:25.01-py3")
    assert not trains_on("cdna3", "nvcr.io/nvidia/pytorch:25.01-py3")
    assert trains_on("cdna3", "rocm/pytorch:rocm7.1.1_ubuntu24.04_py3.12_pytorch_release_2.10.0")


# ---------------------------------------------------------------------------- what is rendered


def test_the_plans_cover_every_machine_the_catalog_sells():
    cat = load_catalog()
    covered = {p.instance for plan in plans().values() for p in plan.pools}
    assert covered == set(cat.instances) | set(cat.onprem_nodes)


def test_each_service_runs_an_image_its_gpu_supports_on_the_right_device():
    cat = load_catalog()
    for case, plan in plans().items():
        deployments = _deployments(case)
        for pool in plan.pools:
            dep = deployments[f"s-{slug(pool.instance)}"]
            (server,) = dep["spec"]["template"]["spec"]["containers"]
            gpu = cat.gpus[pool.gpu]
            assert supports(gpu.architecture, server["image"]), (pool.instance, pool.gpu, server["image"])
            device = "amd.com/gpu" if gpu.vendor == "amd" else "nvidia.com/gpu"
            assert server["resources"]["limits"] == {device: pool.gpus_per_node}, pool.instance
        # the driver the image needs is said beside it
        for path, text in rendered()[case].items():
            if "/30-serve-" in path:
                assert re.search(r"# \S+ \((CUDA|ROCm) [0-9.]+\): the nodes need .*driver", text), path


def _trainers(case: str) -> dict[str, dict]:
    """Training job name -> its trainer containers (one per pricing part)."""
    out: dict[str, list] = {}
    for path, text in rendered()[case].items():
        if "/20-train-" in path:
            for doc in yaml.safe_load_all(text):
                if doc and doc["kind"] == "JobSet":
                    for job in doc["spec"]["replicatedJobs"]:
                        out.setdefault(doc["metadata"]["name"], []).extend(
                            job["template"]["spec"]["template"]["spec"]["containers"])
    return out


def test_each_kubernetes_training_job_runs_an_image_its_gpu_supports():
    cat = load_catalog()
    for case, plan in plans().items():
        trainers = _trainers(case)
        for pool in plan.pools:
            containers = trainers[f"k-{slug(pool.instance)}"]
            gpu = cat.gpus[pool.gpu]
            assert containers
            for c in containers:
                assert trains_on(gpu.architecture, c["image"]), (pool.instance, pool.gpu, c["image"])
                device = "amd.com/gpu" if gpu.vendor == "amd" else "nvidia.com/gpu"
                assert c["resources"]["limits"] == {device: pool.gpus_per_node}, pool.instance
        for path, text in rendered()[case].items():
            if "/20-train-" in path:
                assert re.search(r"# \S+ \((CUDA|ROCm) [0-9.]+\): the nodes need .*driver", text), path
    # Blackwell and AMD get their own images, not the old CUDA one
    aws = {name: c[0]["image"] for name, c in _trainers("aws").items()}
    assert aws["k-p6-b200-48xlarge"] == "nvcr.io/nvidia/pytorch:25.01-py3"
    azure = {name: c[0]["image"] for name, c in _trainers("azure").items()}
    assert azure["k-standard-nd96isr-mi300x-v5"].startswith("rocm/pytorch:")


def test_gke_node_pools_ask_for_the_catalogs_driver_version():
    cat = load_catalog()
    main = plain(hcl2.loads(rendered()["gcp"]["terraform/gcp-all/main.tf"]))
    seen = {}
    for block in main["resource"]:
        for body in block.get("google_container_node_pool", {}).values():
            config = body["node_config"][0]
            install = config["guest_accelerator"][0]["gpu_driver_installation_config"][0]
            seen[config["machine_type"]] = install["gpu_driver_version"]
    gcp = {n: i for n, i in cat.instances.items() if i.provider == "gcp"}
    assert set(seen) == set(gcp)
    for machine, version in seen.items():
        assert version == cat.gpus[gcp[machine].gpu].gke_driver.version, machine


def test_gcp_reservations_and_machines_name_the_catalogs_accelerator_type():
    cat = load_catalog()
    main = plain(hcl2.loads(rendered()["gcp"]["terraform/gcp-all/main.tf"]))
    seen = {}
    for block in main["resource"]:
        for rtype, resources in block.items():
            for body in resources.values():
                machine = (body.get("machine_type") or body.get("node_config", [{}])[0].get("machine_type")
                           or body.get("specific_reservation", [{}])[0].get("instance_properties", [{}])[0]
                           .get("machine_type"))
                if machine is None:
                    continue
                if rtype == "google_compute_reservation":
                    acc = body["specific_reservation"][0]["instance_properties"][0]["guest_accelerators"][0]
                    kind = acc["accelerator_type"]
                elif rtype == "google_container_node_pool":
                    kind = body["node_config"][0]["guest_accelerator"][0]["type"]
                else:
                    kind = body["guest_accelerator"][0]["type"]
                seen.setdefault(machine, set()).add((rtype, kind))
    gcp = {n for n, i in cat.instances.items() if i.provider == "gcp"}
    assert set(seen) == gcp
    for machine, kinds in seen.items():
        # a reservation, the Slurm VM (or template) and the GKE node pool, all with the type
        assert {r for r, _ in kinds} == {"google_compute_reservation", "google_compute_instance",
                                        "google_container_node_pool"}, machine
        assert {k for _, k in kinds} == {cat.instances[machine].accelerator_type}, machine
    assert {k for _, k in seen["a4-highgpu-8g"]} == {"nvidia-b200"}


def test_slurm_declares_each_machines_gpus_as_typed_gres():
    cat = load_catalog()
    for case, plan in plans().items():
        conf = rendered()[case][f"slurm/{_site(case)}/slurm.conf"]
        gres = rendered()[case][f"slurm/{_site(case)}/gres.conf"]
        for pool in plan.pools:
            prefix = slug(pool.instance)
            gtype = slug(pool.gpu)
            assert re.search(rf"^NodeName={re.escape(prefix)}\S* .*Gres=gpu:{gtype}:{pool.gpus_per_node} ",
                             conf, re.M), (case, pool.instance)
            line = re.search(rf"^NodeName={re.escape(prefix)}\S* Name=gpu Type={gtype} File=(\S+)$", gres, re.M)
            assert line, (case, pool.instance)
            files = line.group(1)
            count = 1 if "[" not in files else int(files.split("-")[-1].rstrip("]")) - int(
                re.search(r"\[(\d+)-", files).group(1)) + 1
            assert count == pool.gpus_per_node, (pool.instance, files)
            assert files.startswith("/dev/dri/renderD" if cat.gpus[pool.gpu].vendor == "amd" else "/dev/nvidia")


def test_a_gpu_without_serving_facts_or_a_gcp_machine_without_a_type_stops_the_render():
    from dataclasses import replace

    cat = load_catalog()
    no_image = replace(cat, gpus={**cat.gpus, "B200": replace(cat.gpus["B200"], serving=None)})
    with pytest.raises(CompileError) as info:
        render(plans()["gcp"], no_image)
    assert info.value.diagnostics[0].code == "E711" and "B200" in info.value.diagnostics[0].message
    untyped = replace(cat, instances={**cat.instances, "a4-highgpu-8g": replace(
        cat.instances["a4-highgpu-8g"], accelerator=None)})
    with pytest.raises(CompileError) as info:
        render(plans()["gcp"], untyped)
    assert info.value.diagnostics[0].code == "E710" and "a4-highgpu-8g" in info.value.diagnostics[0].message
    no_trainer = replace(cat, gpus={**cat.gpus, "MI300X": replace(cat.gpus["MI300X"], training=None)})
    with pytest.raises(CompileError) as info:
        render(plans()["azure"], no_trainer)
    assert info.value.diagnostics[0].code == "E711" and "training image" in info.value.diagnostics[0].message
    no_driver = replace(cat, gpus={**cat.gpus, "L4": replace(cat.gpus["L4"], gke_driver=None)})
    with pytest.raises(CompileError) as info:
        render(plans()["gcp"], no_driver)
    assert info.value.diagnostics[0].code == "E712" and "L4" in info.value.diagnostics[0].message


# ---------------------------------------------------------------------------- the real validators


@pytest.mark.parametrize("case", ["aws", "azure", "gcp"])
def test_terraform_parses(case):
    for path, text in rendered()[case].items():
        if path.endswith((".tf", ".tfvars")):
            hcl2.loads(text)


@pytest.mark.slow
def test_kubernetes_objects_pass_kubernetes_validate(tmp_path):
    from test_render_kubernetes import CRD_KINDS

    files, servers = [], 0
    for case in sorted(rendered()):
        for path, text in rendered()[case].items():
            if path.startswith("kubernetes/") and path.endswith(".yaml"):
                for i, doc in enumerate(d for d in yaml.safe_load_all(text) if d):
                    if doc["kind"] in CRD_KINDS:
                        continue        # CRDs: tests/test_render_kubernetes.py checks them
                    f = tmp_path / f"{case}-{len(files):04d}-{doc['kind']}.yaml"
                    f.write_text(yaml.safe_dump(doc, sort_keys=True))
                    files.append(str(f))
                    servers += doc["kind"] == "Deployment" and path.split("/")[-1].startswith("30-serve-")
    # one model server per pool (the routing layer's endpoint pickers are Deployments too)
    assert servers == sum(len(p.pools) for p in plans().values())
    out = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert out.returncode == 0 and not bad, out.stdout + out.stderr


needs_terraform = pytest.mark.skipif(shutil.which("terraform") is None,
                                     reason="terraform is not installed on this machine")
MIRROR = Path("/opt/tf-plugins")


def _terraform_env(tmp_path: Path) -> dict[str, str]:
    import os

    rc = tmp_path / "terraformrc"
    rc.write_text('disable_checkpoint = true\nprovider_installation {\n'
                  f'  filesystem_mirror {{\n    path = "{MIRROR}"\n  }}\n}}\n')
    return {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}


@needs_terraform
def test_terraform_fmt_check(tmp_path):
    for case in ("aws", "azure", "gcp"):
        fmt_check(rendered()[case], tmp_path / case)


@needs_terraform
@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
                    reason="no hashicorp/aws provider mirror under /opt/tf-plugins (no google or azurerm mirror exists)")
def test_terraform_validate_aws(tmp_path):
    folder = tmp_path / "aws-all"
    write({p.split("/", 2)[2]: t for p, t in rendered()["aws"].items() if p.startswith("terraform/aws-all/")},
          folder)
    env = _terraform_env(tmp_path)
    init = subprocess.run(["terraform", "init", "-backend=false", "-input=false", "-no-color"],
                          cwd=folder, capture_output=True, text=True, timeout=180, env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    val = subprocess.run(["terraform", "validate", "-no-color"], cwd=folder, capture_output=True, text=True,
                         timeout=180, env=env)
    assert val.returncode == 0, val.stdout + val.stderr
