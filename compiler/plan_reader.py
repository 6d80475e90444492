"""Reading a plan.json from outside (`--baseline`, `--start-from`, `infra-compile diff A B`).

Such a file may be anything: hand-edited, truncated, a pipe, a device, a gigabyte of one line,
NaN where a cost was. read() turns it into a Plan or a CompileError (exit 2) that names the
file, in stages that each bound the work of the next:

  1. the file: a regular file (no FIFO, device or directory: reading one may never end) of at
     most MAX_BYTES, read without blocking on it;
  2. the JSON: numbers that are finite and of at most MAX_DIGITS digits (Python's json takes
     NaN and Infinity, and 1e400 as inf), nesting at most MAX_DEPTH deep, at most MAX_ITEMS in
     one list or object and MAX_VALUES in all, no text longer than MAX_TEXT, checked before
     anything walks the document recursively;
  3. the version: its schema_version (1 where it states none), refused where it is later than
     this compiler knows (plan.SCHEMA_VERSION, plan.VERSIONS);
  4. the plan schema (schemas/plan.schema.json) of that version, with integers as integers (1e308
     is not a node count) and every count, month and amount within the bounds below where the
     schema has none, and names as the spec and the catalog write them;
  5. upgrade: a plan.json of an earlier version brought to this one (each key it lacked filled
     with what its absence meant), so nothing after this reader handles an older file;
  6. plan.from_dict.

A diff reads plans of version 1 that lack some of its fields (`complete=False`); a baseline must
be complete (its terms, monthly nodes and holdings are what the re-plan carries: a file without
them is refused, not read as holding nothing). Messages quote at most a short excerpt of what the file holds.

  E010 not a plan.json: unreadable, not UTF-8 or JSON (its line and column), or what the schema
       rejects
  E013 refused before reading it as a plan: not a regular file, larger than MAX_BYTES, nested
       deeper than MAX_DEPTH, more than MAX_ITEMS items in one list or MAX_VALUES in all
  E014 a number that is not finite, not an integer where one is due, or out of range

A complete plan (a baseline) must also place its workloads where it says it runs: a placement
while `pools` is empty, or at a site that neither `sites` nor a pool names, is E010 (what the
compiler writes never holds either; what follows a baseline reads its placements' pools).
"""

from __future__ import annotations

import copy
import functools
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from compiler.diagnostics import CompileError, Diagnostic, Position, Source
from compiler.source import Unreadable
from compiler.source import read_text as source_text
from compiler.plan import SCHEMA_VERSION, Plan, from_dict
from compiler.resources import schema

MAX_BYTES = 32 << 20       # 32 MiB: room for MAX_ITEMS pools of 120 months each
MAX_DEPTH = 64             # a plan nests about 8 deep, and a workload's `inputs` as deep as its spec (32)
MAX_ITEMS = 10_000         # pools, workloads, months ... in one list
MAX_VALUES = 1_000_000     # values in the whole document: the schema check takes time in proportion
MAX_TEXT = 10_000          # characters in one string
MAX_DIGITS = 40            # characters of one number literal
MAX_COUNT = 10_000_000     # nodes, GPUs, replicas, months: beyond any fleet, far below float trouble
MAX_AMOUNT = 1e15          # dollars, hours, rates
EXCERPT = 60               # characters of a value or a line quoted in a message

# The calendar the compiler names months in: the spec's `start` must lie in these years
# (schemas/spec.schema.json), so every month a plan names, a node's life end included, has four digits.
FIRST_START, LAST_START = "1900-01", "2999-12"

HINT = "pass the plan.json an earlier compile wrote (its output folder's plan.json), unedited"

# Where a plan holds one name from the spec (its pattern) or the catalog (its name pattern, or
# '' for none): the fleet a diff lists and a baseline carries. Free text (notes, an
# alternative's "a + b" sites) is bounded in length only.
_SPEC_NAMES = {"site": ("name",), "workload": ("name",), "pool": ("site",), "placement": ("site",),
               "storage": ("site",), "held": ("site",), "owned_ages": ("site",)}
_CATALOG_NAMES = {"pool": ("instance", "gpu", "fabric"), "placement": ("instance",), "workload": ("gpu",),
                  "storage": ("tier",), "held": ("instance",), "owned_ages": ("instance",)}


class _Refused(str):
    """A number literal the reader refuses (NaN, Infinity, 1e400, 10^5 digits), kept as its text
    so the check after parsing can say where it was and what it said."""


def _float(text: str) -> float | _Refused:
    if len(text) > MAX_DIGITS:
        return _Refused(text)
    value = float(text)
    return value if math.isfinite(value) else _Refused(text)


def _int(text: str) -> int | _Refused:
    return _Refused(text) if len(text) > MAX_DIGITS else int(text)


def excerpt(value: Any, width: int = EXCERPT) -> str:
    """A value as a message quotes it: repr, cut to `width` characters."""
    text = repr(value) if not isinstance(value, _Refused) else str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _error(path: str | Path, code: str, message: str, at: tuple = (), position: Position | None = None,
           hint: str | None = HINT, source: Source | None = None) -> CompileError:
    return CompileError([Diagnostic(code, message, at, position, hint)], source=source or Source(str(path)))


def read_text(path: str | Path, limit: int = MAX_BYTES) -> str:
    """The text of `path`, a regular file of at most `limit` bytes, or E010/E013. The file is
    opened without blocking and checked before a byte is read (compiler.source.read_text): a
    FIFO, a device or /dev/zero would never end."""
    try:
        return source_text(path, limit)
    except Unreadable as exc:
        if exc.why == "missing":
            raise _error(path, "E010", "no such file") from None
        if exc.why == "error":
            raise _error(path, "E010", f"cannot read it: {exc.detail}") from None
        if exc.why == "text":
            raise _error(path, "E010", exc.detail) from None
        if exc.why == "large":
            raise _error(path, "E013", f"the file is {exc.size:,} bytes or more, more than a plan.json has "
                                       f"(at most {limit:,})") from None
        kind = "a directory" if exc.why == "directory" else exc.detail
        raise _error(path, "E013", f"is {kind}, not a plan.json file", hint="pass the plan.json file itself") from None


def parse(path: str | Path, text: str) -> Any:
    """The JSON in `text`, numbers as _float/_int/NaN leave them, or E010/E013."""
    try:
        return json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_Refused)
    except RecursionError:
        raise _error(path, "E013", f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        lines = text.split("\n")
        line = lines[exc.lineno - 1] if exc.lineno <= len(lines) else ""
        if len(line) <= 200:
            # short enough to show with a caret under the column (the other lines are not shown)
            shown = ("",) * (exc.lineno - 1) + (line,)
            raise _error(path, "E010", f"not JSON: {exc.msg}", (), Position(exc.lineno, exc.colno),
                         source=Source(str(path), "", shown)) from None
        near = line[max(0, exc.colno - 1 - EXCERPT // 2):exc.colno - 1 + EXCERPT // 2]
        raise _error(path, "E010", f"not JSON: {exc.msg}, near {near!r}", (),
                     Position(exc.lineno, exc.colno)) from None


def _values(doc: Any) -> Iterator[tuple[Any, Any, int]]:
    """Every value of the document with its path (as a chain of (key, parent) pairs, built only
    where a message needs it) and depth, in document order, without recursion."""
    stack: list[tuple[Any, Any, int]] = [(doc, None, 0)]
    while stack:
        value, chain, depth = stack.pop()
        yield value, chain, depth
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        if len(items) > MAX_ITEMS:
            yield _TooMany(len(items)), chain, depth
            return
        stack.extend((v, (k, chain), depth + 1) for k, v in reversed(items))


class _TooMany(int):
    """A list or object with more than MAX_ITEMS items (its count)."""


def _path(chain: Any) -> tuple:
    out = []
    while chain is not None:
        key, chain = chain
        out.append(key)
    return tuple(reversed(out))


def check_values(path: str | Path, doc: Any) -> None:
    """E013/E014 for the first value out of bounds, before anything recurses into the document."""
    for count, (value, chain, depth) in enumerate(_values(doc), 1):
        if count > MAX_VALUES:
            raise _error(path, "E013", f"more than {MAX_VALUES:,} values, more than a plan.json has")
        if depth > MAX_DEPTH:
            raise _error(path, "E013", f"nested deeper than {MAX_DEPTH} levels", _path(chain))
        if isinstance(value, _TooMany):
            raise _error(path, "E013", f"{int(value):,} items in one list or object, more than a plan.json has "
                                       f"(at most {MAX_ITEMS:,})", _path(chain))
        if isinstance(value, _Refused):
            what = ("number must be finite" if value.lstrip("-") in ("NaN", "Infinity") or len(value) <= MAX_DIGITS
                    else f"number is too long ({len(value):,} characters)")
            raise _error(path, "E014", f"{what}, got {excerpt(value)}", _path(chain),
                         hint="a plan.json a compile wrote has plain, finite numbers; " + HINT)
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise _error(path, "E013", f"a text of {len(value):,} characters, more than a plan.json has "
                                       f"(at most {MAX_TEXT:,})", _path(chain))
        if isinstance(value, dict):
            for key in value:
                if len(key) > MAX_TEXT:
                    raise _error(path, "E013", f"a key of {len(key):,} characters", _path(chain))


OLDER_HINT = ("an older infra-compile wrote this plan.json, before plans recorded everything a re-plan "
              "carries: compile the baseline's spec again with this release and pass that plan.json")
UPGRADE_HINT = "upgrade infra-compile to the release that wrote it (or a later one)"


def version(path: str | Path, doc: dict) -> int:
    """The document's schema_version (1 where it has none: written before versions were stated),
    or E010 for one that is no version, or that is later than this compiler knows."""
    if "schema_version" not in doc:
        return 1
    v = doc["schema_version"]
    if not isinstance(v, int) or isinstance(v, (bool, _Refused)) or v < 1:
        raise _error(path, "E010", f"the plan is not a plan.json this compiler wrote: schema_version must be a "
                                   f"whole number from 1, got {excerpt(v)}", ("schema_version",))
    if v > SCHEMA_VERSION:
        raise _error(path, "E010", f"the plan is schema_version {v}, written by a newer infra-compile: this one "
                                   f"reads versions 1 to {SCHEMA_VERSION}", ("schema_version",), hint=UPGRADE_HINT)
    return v


def _fill(obj: Any, defaults: dict[str, Any]) -> None:
    if isinstance(obj, dict):
        for key, value in defaults.items():
            if key not in obj:
                obj[key] = copy.deepcopy(value)


def _each(obj: Any, key: str) -> list:
    """obj[key] where it is a list of objects (the schema check after says what else it is)."""
    items = obj.get(key) if isinstance(obj, dict) else None
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


# Version 1 -> 2: what each key a plan.json lacked meant, by where it is. A list the plan did
# not record is an empty one (a placement without holdings: its nodes of its pricing, node-hours
# unknown; without monthly_replicas: its peak only), as for a Plan made without them.
_LAYOUT = {"tp": 1, "pp": 1, "dp": 1, "ep": 1, "cp": 1}
_V1 = {
    "top": {"storage": [], "binding_constraints": [], "monthly_cost_usd": [], "breakeven": [], "idle_owned": [],
            "after_horizon": {"rule": "prorated", "commitments": [], "committed_usd": 0.0, "charged_usd": 0.0}},
    "solver": {"gap_note": "", "strategy": {"path": "", "steps": [], "why": ""}},
    "pool": {"monthly_utilization": [], "monthly_node_hours": [], "reservations": []},
    "workload": {"start_month": 0, "alternatives": [], "quantization": "", "max_model_len": 0,
                 "deadline_days": None, "availability": 0.0},
    "placement": {"batch": 0, "candidate": "", "gpus_per_replica": 0, "holdings": [], "monthly_replicas": []},
    "alternative": {"parts": []},
    "storage": {"monthly_tb": []},
    "held": {"monthly_used": []},
    "operability": {"alone": []},
}


def _from_1(doc: dict) -> None:
    """Version 1 to 2, in place: every key a plan.json written before versions may lack, filled
    with what its absence meant (_V1); a pool's nodes month by month where it gave none are its
    nodes in every month; a placement's layout where it gave none is its workload's (the one the
    files ran); an inference workload's replicas at once where it gave none are its placements'
    peaks added up (what the report showed then)."""
    _fill(doc, _V1["top"])
    _fill(doc.get("solver"), _V1["solver"])
    _fill(doc.get("operability"), _V1["operability"])
    horizon = doc.get("horizon_months")
    for p in _each(doc, "pools"):
        if "monthly_nodes" not in p and isinstance(horizon, int) and 0 < horizon <= MAX_ITEMS:
            p["monthly_nodes"] = [p.get("nodes")] * horizon
        _fill(p, _V1["pool"])
    for s in _each(doc, "storage"):
        _fill(s, _V1["storage"])
    for h in _each(doc, "held"):
        _fill(h, _V1["held"])
    for w in _each(doc, "workloads"):
        _fill(w, _V1["workload"])
        _fill(w.get("layout"), _LAYOUT)
        if w.get("kind") == "inference" and "replicas" not in w:
            peaks = [p.get("replicas", 0) for p in _each(w, "placements")]
            if all(isinstance(x, int) for x in peaks):
                w["replicas"] = sum(peaks)
        for p in _each(w, "placements"):
            _fill(p, _V1["placement"])
            if "layout" not in p and isinstance(w.get("layout"), dict):
                p["layout"] = copy.deepcopy(w["layout"])
            _fill(p.get("layout"), _LAYOUT)
        for a in _each(w, "alternatives") + ([w["chosen_alone"]] if isinstance(w.get("chosen_alone"), dict) else []):
            _fill(a, _V1["alternative"])


_UPGRADES = {1: _from_1}      # version -> the step to the next one


def upgrade(path: str | Path, doc: dict) -> dict:
    """The document (of its version's schema) as this SCHEMA_VERSION has it: each step from its
    version to the next run in turn, in place. The one place that knows what earlier plan.json
    files lacked and what that meant."""
    for step in range(version(path, doc), SCHEMA_VERSION):
        _UPGRADES[step](doc)
    doc["schema_version"] = SCHEMA_VERSION
    return doc


@functools.cache
def _schemas() -> tuple[dict, dict]:
    """The plan schema with the reader's bounds and names (this SCHEMA_VERSION's), and version
    1's: the same without the keys it requires below the top level (fields were added one by one
    before plan.json stated a version, so a file of then may lack any of them)."""
    spec_name = schema("spec.schema.json")["$defs"]["name"]["pattern"]
    catalog_name = schema("catalog.schema.json")["$defs"]["name"]["pattern"]
    doc = copy.deepcopy(schema("plan.schema.json"))

    def bound(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                bound(item)
        elif isinstance(node, dict):
            types = node.get("type")
            types = [types] if isinstance(types, str) else list(types or [])
            if "integer" in types:
                node.setdefault("maximum", MAX_COUNT)
                node.setdefault("minimum", -MAX_COUNT)
            elif "number" in types:
                node.setdefault("maximum", MAX_AMOUNT)
                node.setdefault("minimum", -MAX_AMOUNT)
            for k, v in node.items():
                if k not in ("enum", "const", "required"):
                    bound(v)

    bound(doc)
    props = doc["properties"]
    objects = {**{name: doc["$defs"][name] for name in ("site", "workload", "pool", "placement", "storage")},
               "held": props["held"]["items"], "owned_ages": props["owned_ages"]["items"]}
    props["spec"]["properties"]["name"]["pattern"] = spec_name
    for names, pattern in ((_SPEC_NAMES, spec_name), (_CATALOG_NAMES, f"(^$)|({catalog_name})")):   # '': none
        for where, keys in names.items():
            for key in keys:
                objects[where]["properties"][key]["pattern"] = pattern
    older = copy.deepcopy(doc)

    def loosen(node: Any, top: bool) -> None:
        if isinstance(node, dict):
            if not top:
                node.pop("required", None)
            for v in node.values():
                loosen(v, False)
        elif isinstance(node, list):
            for v in node:
                loosen(v, False)

    loosen(older, True)
    older["required"] = [k for k in older["required"] if k not in _V1["top"] and k != "schema_version"]
    older["properties"]["schema_version"] = {"const": 1}
    return doc, older


@functools.cache
def _validator(current: bool):
    import jsonschema
    from jsonschema import validators

    # JSON's 1e308 is a float: jsonschema would take it for an integer, and a count of nodes
    # must be one the plan could have written.
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
    cls = validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    now, older = _schemas()
    return cls(now if current else older)


def _number(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _schema_error(path: str | Path, error, more: int) -> CompileError:
    while error.validator in ("oneOf", "anyOf") and error.context:
        # the branch that got furthest says what is wrong (not "is not null")
        error = max(error.context, key=lambda e: len(e.absolute_path))
    at = tuple(error.absolute_path)
    value, kind, expected = error.instance, error.validator, error.validator_value
    tail = f" (and {more} more)" if more else ""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and numeric:
        word = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kind]
        return _error(path, "E014", f"must be {word} {_number(expected)}, got {excerpt(value)}{tail}", at)
    if kind == "type" and "integer" in ([expected] if isinstance(expected, str) else expected) and numeric:
        return _error(path, "E014", f"must be an integer, got {excerpt(value)}{tail}", at)
    if kind == "type":
        wanted = " or ".join([expected] if isinstance(expected, str) else expected)
        return _error(path, "E010", f"the plan is not a plan.json this compiler wrote: must be {wanted}, got "
                                    f"{excerpt(value)}{tail}", at)
    if kind == "pattern":
        return _error(path, "E010", f"the plan is not a plan.json this compiler wrote: {excerpt(value)} is not a "
                                    f"name, month or digest as a plan writes it{tail}", at)
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = error.schema.get("properties", {})
        extra = sorted(str(k) for k in value if k not in allowed)
        return _error(path, "E010", f"the plan is not a plan.json this compiler wrote: unknown key "
                                    f"{excerpt(extra[0] if extra else '?')}{tail}", at)
    if kind == "required" and isinstance(value, dict):
        missing = [k for k in expected if k not in value]
        return _error(path, "E010", f"the plan is not a plan.json this compiler wrote: missing key "
                                    f"{excerpt(missing[0] if missing else '?')}{tail}", at)
    message = error.message if len(error.message) <= 2 * EXCERPT else f"{kind} fails for {excerpt(value)}"
    return _error(path, "E010", f"the plan is not a plan.json this compiler wrote: {message}{tail}", at)


def check_schema(path: str | Path, doc: Any, current: bool = True) -> None:
    """E010/E014 for what the plan schema rejects: this version's, or (current=False) version 1's."""
    if not isinstance(doc, dict):
        raise _error(path, "E010", f"the plan is not a plan.json this compiler wrote: a plan is a JSON object, "
                                   f"this is {type(doc).__name__ if doc is not None else 'null'}")
    errors = sorted(_validator(current).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise _schema_error(path, errors[0], len(errors) - 1)
    start = doc.get("start")
    if isinstance(start, str) and not FIRST_START <= start <= LAST_START:
        raise _error(path, "E014", f"the plan starts in {start}, outside the months a plan names "
                                   f"({FIRST_START} to {LAST_START})", ("start",))


def check_placements(path: str | Path, doc: dict) -> None:
    """E010 for a placement the plan holds nothing for: workloads placed while `pools` is empty,
    or a placement at a site that no entry of `sites` or `pools` names. (A placement at a named
    site on an instance no pool there holds is left to what reads it: the runbook names it.)"""
    pools = doc.get("pools") or []
    sites = {s.get("name") for s in doc.get("sites") or [] if isinstance(s, dict)} \
        | {p.get("site") for p in pools if isinstance(p, dict)}
    for i, w in enumerate(doc.get("workloads") or []):
        for j, p in enumerate(w.get("placements") or [] if isinstance(w, dict) else []):
            if not isinstance(p, dict):
                continue
            at = ("workloads", i, "placements", j)
            if not pools:
                raise _error(path, "E010", f"the plan cannot be read back: workload {excerpt(w.get('name'))} is "
                                           f"placed at {excerpt(p.get('site'))}, but the plan holds no pools",
                             ("pools",), hint=HINT)
            if p.get("site") not in sites:
                raise _error(path, "E010", f"the plan cannot be read back: workload {excerpt(w.get('name'))} is "
                                           f"placed at {excerpt(p.get('site'))}, a site the plan's sites and "
                                           f"pools do not name", at + ("site",), hint=HINT)


def read(path: str | Path, complete: bool = True) -> Plan:
    """The plan in the file at `path`, or a CompileError (exit 2) naming the file. The Plan
    remembers the file (source_of) so later errors about what it says name it too."""
    doc = parse(path, read_text(path))
    check_values(path, doc)
    older = isinstance(doc, dict) and version(path, doc) < SCHEMA_VERSION
    try:
        # a baseline of version 1 must hold every key this version requires, the version aside
        check_schema(path, {**doc, "schema_version": SCHEMA_VERSION} if older and complete else doc,
                     current=complete or not older)
    except CompileError as exc:
        if older and complete:
            # a baseline from an older compiler that lacks what a re-plan carries
            exc.diagnostics[0] = replace(exc.diagnostics[0], hint=OLDER_HINT)
        raise
    doc = upgrade(path, doc)
    if complete:
        check_placements(path, doc)
    try:
        plan = from_dict(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing key {excerpt(exc.args[0])}" if isinstance(exc, KeyError) and exc.args else \
            f"{type(exc).__name__}: {excerpt(str(exc), 2 * EXCERPT)}"
        raise _error(path, "E010", f"the plan cannot be read back: {what}") from None
    object.__setattr__(plan, "_read_from", str(path))
    return plan


def source_of(plan: Plan) -> Source | None:
    """The file a Plan was read from (read()), for errors about what it says; None for one the
    compiler made."""
    where = getattr(plan, "_read_from", None)
    return None if where is None else Source(where)

