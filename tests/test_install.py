"""A plain (non-editable) `pip install .` must work without the source tree.

schemas/ and templates/ live at the top of the repository; pyproject maps them into the
package. This builds a wheel-style install into a fresh virtual environment (reusing
this environment's dependencies, no network), then runs the installed console script
from a directory that holds only a copy of one example.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    # Copy only what git would ship, so stray build output cannot hide a packaging bug.
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    env_dir = base / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    # Reuse this environment's packages (pip, setuptools, the dependencies) through a .pth
    # file: `system_site_packages` would expose the base interpreter's instead, whose older
    # setuptools cannot build a wheel when pytest runs inside a virtual environment.
    site_dir = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    outer = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site_dir / "_outer_env.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                        "--no-index", "-q", str(src)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert r.returncode == 0, r.stderr
    shutil.rmtree(src)  # the source tree is gone: only the installed package remains
    return env_dir


@pytest.mark.slow
def test_installed_package_carries_schemas_templates_and_data(installed, tmp_path):
    py = installed / "bin" / "python"
    code = ("import compiler, compiler.resources as r, pathlib;"
            "print(pathlib.Path(compiler.__file__).parent);"
            "print(sorted(p.name for p in pathlib.Path(str(r.templates_dir())).iterdir()));"
            "print(sorted(p.name for p in r.catalog_data_dir().glob('*.yaml')));"
            "print(r.schema('spec.schema.json')['$schema'])")
    r = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pkg_dir, templates, data, schema_uri = r.stdout.splitlines()
    assert str(installed) in pkg_dir, "imported the source tree, not the installed package"
    assert "terraform" in templates and "slurm" in templates and "kubernetes" in templates
    assert "gpus.yaml" in data
    assert "2020-12" in schema_uri


@pytest.mark.slow
def test_installed_console_script_validates_an_example(installed, tmp_path):
    spec = tmp_path / "spec.yaml"
    shutil.copy(ROOT / "examples" / "llm-pretrain-aws.yaml", spec)
    r = subprocess.run([str(installed / "bin" / "infra-compile"), "validate", str(spec)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


@pytest.mark.slow
def test_installed_console_script_compiles_an_example(installed, tmp_path):
    """The README's first quick-start command: every stage, audit and render included, from the
    installed package alone (a subpackage missing from pyproject's list fails here)."""
    spec = tmp_path / "spec.yaml"
    shutil.copy(ROOT / "examples" / "llm-pretrain-aws.yaml", spec)
    r = subprocess.run([str(installed / "bin" / "infra-compile"), str(spec), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "plan.json").is_file() and (tmp_path / "out" / "report.md").is_file()
