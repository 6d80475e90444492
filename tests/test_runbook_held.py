"""RUNBOOK.md where the plan imports reservations held already (tests/test_render_held.py renders
them): the site's Terraform step tells ops to set `held_reservation_ids` before the apply, names
each reservation (its key, site, instance and held nodes) with a terraform.tfvars example whose ids
pass the variable's own check, and says nothing of it where nothing is held. Read with python-hcl2
and shellcheck, sharing no code with compiler/render/runbook.py."""

from __future__ import annotations

import re
import subprocess

import hcl2
import pytest

from compiler.catalog import load_catalog
from compiler.render import render
from test_render_held import CASES, _plan_with_held
from test_runbook import _code_blocks, _site_section, _tool


def _files(provider: str, held: bool = True) -> dict[str, str]:
    return render(_plan_with_held(provider, held), load_catalog())


def _imported(main_tf: str) -> dict[str, int]:
    """Held reservation key -> the import blocks adopting it, read from main.tf."""
    keys = re.findall(r'id\s*=.*var\.held_reservation_ids\["([^"]+)"\]', main_tf)
    return {k: keys.count(k) for k in keys}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_the_runbook_says_to_set_the_held_ids_before_the_apply(provider):
    files = _files(provider)
    site = f"{provider}-x"
    section = _site_section(files["RUNBOOK.md"], site)
    imported = _imported(files[f"terraform/{site}/main.tf"])
    assert imported, "the plan imports nothing: the case no longer holds a term"
    # the step comes before the apply, and names the variable
    step = section.index("held_reservation_ids")
    assert step < section.index("apply tfplan")
    # each held reservation: its key, the site, the instance and the nodes held (2 since before the plan)
    _region, instance = CASES[provider][:2]
    for key in imported:
        row = re.search(rf"^\| `{re.escape(key)}` \| {re.escape(site)} \| {re.escape(instance)} \| 2 \| 3 \|$",
                        section, re.M)
        assert row, (key, section[step:step + 800])
    # the tfvars example sets every key, each id in the form the variable's validation takes
    example = next(b for b in _code_blocks(section, "hcl") if "held_reservation_ids" in b)
    ids = hcl2.loads(example)["held_reservation_ids"]
    assert {k.strip('"') for k in ids} == set(imported)
    pattern = re.search(r'can\(regex\("(.+?)", id\)\)', files[f"terraform/{site}/variables.tf"]).group(1)
    assert all(re.fullmatch(pattern.replace("\\\\", "\\"), v.strip('"')) for v in ids.values()), (pattern, ids)
    # the first plan's count: the held reservations imported, the rest added
    n = sum(imported.values())
    assert re.search(rf"`Plan: {n} to import, \d+ to add, 0 to change, 0 to destroy\.`", section), section


@pytest.mark.parametrize("provider", sorted(CASES))
def test_no_held_step_where_nothing_is_held(provider):
    files = _files(provider, held=False)
    assert not _imported(files[f"terraform/{provider}-x/main.tf"])
    assert "held_reservation_ids" not in files["RUNBOOK.md"]
    assert "to import" not in files["RUNBOOK.md"]


def test_the_held_runbooks_shell_blocks_pass_shellcheck(tmp_path):
    scripts = []
    for provider in sorted(CASES):
        for i, block in enumerate(_code_blocks(_files(provider)["RUNBOOK.md"], "sh")):
            lines = block.splitlines()
            indent = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
            path = tmp_path / f"{provider}-{i}.sh"
            path.write_text("#!/bin/bash\n" + "\n".join(l[indent:] for l in lines) + "\n")
            scripts.append(str(path))
    assert scripts
    out = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash", *scripts],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
