"""What plan.json records of each workload's spec (`workloads[].inputs`).

`infra-compile diff` tells a change of the spec from a change the re-plan made only if each plan
says what it was asked: the workload as the user stated it, parsed (defaults filled in, so a
default written out or left out reads the same). The form is canonical so that the same
workload gives the same bytes: a plain dict with sorted keys; tuples as lists; no `None` (an
absent key reads as unset); integral floats as integers (`peak_rps: 20` is parsed to 20.0);
no `name` or `kind` (the entry's own) and no `path` (where the workload sits in the file moves
with edits to other workloads, and is not an input).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

# the entry states these itself; `path` is where in the file, not what
_TOP_LEVEL_ONLY = frozenset({"name", "kind"})
_NEVER = frozenset({"path"})


def inputs_of(workload: Any) -> dict[str, Any]:
    """The spec's workload (compiler.spec TrainingWorkload or InferenceWorkload) as plan.json
    records it."""
    return {k: v for k, v in _plain(workload).items() if k not in _TOP_LEVEL_ONLY}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in fields(value):
            v = getattr(value, f.name)
            if f.name not in _NEVER and v is not None:
                out[f.name] = _plain(v)
        return dict(sorted(out.items()))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
