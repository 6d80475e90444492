"""The one comparison of two plans (compiler/compare.py), as the diff, the runbook and the report
of one re-plan read it: they count the same workloads moved, resized and unchanged. Oracles: the
changes made here by hand to a plan (which workloads were resized, which left alone), and the
characters written into its names; no code is shared with compiler/compare.py."""

from __future__ import annotations

import re
from dataclasses import replace

from rich.console import Console

from compiler.catalog import load_catalog
from compiler.diff import diff_plans, diff_to_json, render_diff
from compiler.plan import Holding
from compiler.render import render
from compiler.report import render_report
from plans import HORIZON, renamed, split_plan, with_placement


def _resized() -> tuple:
    """split_plan, and a re-plan of it that resizes two workloads where they run (chat: 6 replicas
    of its first layout for 4; steady: 2 nodes for 1) and leaves burst alone."""
    base = split_plan()
    head = with_placement(base, "chat", 0, replicas=6, monthly_replicas=(6,) * HORIZON)
    head = with_placement(head, "steady", 0, nodes=2, holdings=(
        Holding("reserved_1y", (2,) * 11 + (0,), (1460.0,) * 10 + (1400.0, 0.0)),))
    return base, head


EXPECTED = {"resized": ["chat", "steady"], "unchanged": ["burst"]}


def _report_counts(text: str) -> dict[str, int]:
    """The report's summary line of workloads: 'workloads: a moved, 2 resized, 1 unchanged.'"""
    line = re.search(r"workloads: (.*?)\.\n", text).group(1)
    out: dict[str, int] = {}
    for part in line.split(", "):
        m = re.fullmatch(r"(\d+) (\w[\w ]*)", part)
        if m:
            out[m.group(2)] = int(m.group(1))
        else:
            out[part.split(" ", 1)[1]] = out.get(part.split(" ", 1)[1], 0) + 1
    return out


def test_the_report_counts_the_workloads_the_diff_lists_as_resized_and_unchanged():
    base, head = _resized()
    doc = diff_to_json(diff_plans(base, head))
    listed = {}
    for w in doc["workloads"]:
        listed.setdefault(w["change"], []).append(w["name"])
    assert listed == {"resized": EXPECTED["resized"]} and doc["unchanged_workloads"] == 1
    report = render_report(head, load_catalog(), base)["report.md"]
    assert _report_counts(report) == {"resized": 2, "unchanged": 1}
    assert "placed as before" not in report
    # the runbook counts the one unchanged workload as kept, and the two resized apart
    runbook = render(head, load_catalog(), base)["RUNBOOK.md"]
    assert re.search(r"Kept as the baseline runs them: \S+ pools? and 1 workload, deployed already", runbook)
    assert "Changed where they run (this plan's files carry it): 2 resized." in runbook


def test_a_moved_workload_is_moved_in_the_diff_and_the_report_alike():
    base, head = _resized()
    moved = with_placement(head, "burst", 0, instance="g6e.48xlarge")      # a pool the plans run
    doc = diff_to_json(diff_plans(base, moved))
    assert {w["name"]: w["change"] for w in doc["workloads"]}["burst"] == "moved"
    report = render_report(moved, load_catalog(), base)["report.md"]
    counts = _report_counts(report)
    assert counts == {"moved": 1, "resized": 2, "unchanged": 0}
    assert "burst moved" in report


def test_the_diff_on_a_terminal_escapes_control_and_bidi_characters_in_every_name():
    base, head = _resized()
    hostile = "chat\x1b[31m\u202eevil"
    a, b = renamed(base, "chat", hostile), renamed(head, "chat", hostile)
    b = replace(b, spec_name="spec\x07[bold]x[/bold]\u2066", catalog_version="cat\r\nlog")
    console = Console(record=True, width=300, force_terminal=False, color_system=None)
    render_diff(diff_plans(a, b), console)
    out = console.export_text()
    for raw in ("\x1b", "\u202e", "\x07", "\u2066", "\r"):
        assert raw not in out, repr(raw)
    assert "chat\\x1b[31m\\u202eevil" in out
    assert "spec\\x07[bold]x[/bold]\\u2066" in out      # rich markup in a name is shown, not applied
    assert "cat\\r\\nlog" in out
