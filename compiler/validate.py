"""The validate stage: Document -> Spec, or CompileError with every problem at once.

Three passes over the loaded data, all of which always run so a user sees every
mistake in one go:
  1. JSON Schema (schemas/spec.schema.json, Draft 2020-12): shape, types, enums, ranges,
     names. Each jsonschema error becomes a Diagnostic with a stable code (E1xx).
  2. Semantic checks the schema cannot express (compiler.semantic, E2xx).
  3. Only when both are clean: the frozen Spec, with defaults filled.

Schema codes:
  E101 unknown key            E105 not one of the allowed values
  E102 out of range           E106 bad name (pattern)
  E103 wrong type             E107 wrong number of items / not unique / empty
  E104 missing required key
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from compiler import edge, semantic, unit_costs
from compiler.catalog.model import Catalog
from compiler.diagnostics import CompileError, Diagnostic, Path, did_you_mean
from compiler.plan import MONTH_PATTERN, month_number
from compiler.resources import schema as load_schema
from compiler.source import Document
from compiler.spec import (DEFAULT_SLO_HEADROOM, Checkpoint, CloudSite, Data, HeldReservation, ImageTraffic,
                           InferenceWindow, InferenceWorkload, InlineModel, OnPremSite, OwnedNodes, Pin, Policy, Slo,
                           Spec, Speculative, Traffic, TrainingWindow, TrainingWorkload)

SCHEMA_NAME = "spec.schema.json"

# YAML 1.1 (pyyaml) reads `2.0e12` as a string: its float syntax wants a signed exponent.
# Every user and YAML 1.2 read it as a number, so such plain strings become floats.
_EXPONENT_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")
_NUMBER_WITH_UNIT = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)\s*[A-Za-z%/]+\s*$")

_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "object": "a mapping", "array": "a list", "boolean": "true or false",
               "null": "null"}


# ----------------------------------------------------------------------------- entry point

def validate(doc: Document, catalog: Catalog) -> Spec:
    """Validate a loaded spec against the schema and the catalog; return the frozen Spec.

    Raises CompileError (exit 2) with every diagnostic, sorted by position.
    """
    return check(doc, catalog).spec


@dataclass(frozen=True)
class Checked:
    """A valid spec and the warnings its validation gave (sorted by position)."""

    spec: Spec
    warnings: tuple[Diagnostic, ...] = ()


def check(doc: Document, catalog: Catalog, *, allow_unpriced_regions: bool = False) -> Checked:
    """`validate`, with the warnings kept: `allow_unpriced_regions` turns E215 (a cloud site in a
    region the catalog prices nothing in) into a warning. Raises CompileError (exit 2) when any
    diagnostic is an error; the warnings are then listed among the errors."""
    data = _normalise_numbers(doc.data)
    diagnostics = [d for d in schema_diagnostics(doc, data) if not semantic.asks_llm_keys_of_vision(d, data, catalog)]
    diagnostics += semantic.check(doc, data, catalog, allow_unpriced_regions=allow_unpriced_regions)
    diagnostics += edge.check(doc, data, catalog)
    diagnostics = _dedupe(diagnostics)
    if any(d.severity == "error" for d in diagnostics):
        raise CompileError(diagnostics, 2, doc.source)
    return Checked(build_spec(doc, data, catalog),
                   tuple(sorted(diagnostics, key=Diagnostic.sort_key)))


def _normalise_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise_numbers(v) for v in value]
    if isinstance(value, str) and _EXPONENT_NUMBER.match(value):
        return float(value)
    return value


def _dedupe(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    seen: dict[tuple, Diagnostic] = {}
    for d in diagnostics:
        seen.setdefault((d.code, d.path, d.message), d)
    return list(seen.values())


# ----------------------------------------------------------------------------- schema errors

def schema_diagnostics(doc: Document, data: Any, schema_name: str = SCHEMA_NAME) -> list[Diagnostic]:
    """Every error of `data` against schemas/<schema_name>, each at its position in `doc`."""
    spec_schema = load_schema(schema_name)
    validator = Draft202012Validator(spec_schema)
    out: list[Diagnostic] = []
    for error in validator.iter_errors(data):
        out.extend(_leaf_diagnostics(doc, error, spec_schema))
    return out


def _leaf_diagnostics(doc: Document, error: ValidationError, root: dict) -> list[Diagnostic]:
    # The schema discriminates with if/then (on `type` and `kind`), so errors arrive from
    # the right branch. A oneOf/anyOf (checkpoint.interval_min: a number or 'auto') is reduced
    # to its best branch: one whose type the value has (a range error) before a type mismatch.
    if error.validator in ("oneOf", "anyOf") and error.context:
        fitting = [e for e in error.context if e.validator not in ("type", "const", "enum")]
        return _leaf_diagnostics(doc, best_match(fitting or error.context), root)
    return _to_diagnostics(doc, error, root)


def _to_diagnostics(doc: Document, error: ValidationError, root: dict) -> list[Diagnostic]:
    path: Path = tuple(error.absolute_path)
    value = error.instance
    kind = error.validator
    expected = error.validator_value

    def at(code: str, message: str, hint: str | None = None, target: Path | None = None,
           key: bool = False) -> Diagnostic:
        where = path if target is None else target
        return Diagnostic(code, message, path, doc.position(where, key=key), hint)

    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = sorted(error.schema.get("properties", {}))
        return [at("E101", f"unknown key '{k}'", _unknown_key_hint(k, allowed, error, root),
                   target=path + (k,), key=True)
                for k in sorted(value) if k not in allowed]
    if kind == "required" and isinstance(value, dict):
        missing = [f"'{k}'" for k in expected if k not in value]
        if len(missing) == 1:
            return [at("E104", f"missing required key {missing[0]}", key=True)]
        listed = ", ".join(missing[:-1]) + " and " + missing[-1]
        return [at("E104", f"missing required keys {listed}", key=True)]
    if kind in _BOUNDS:
        return [at("E102", f"must be {_BOUNDS[kind]} {_num(expected)}, got {_num(value)}")]
    if kind == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        want = " or ".join(_TYPE_WORDS[t] for t in types)
        hint = None
        if isinstance(value, str) and _NUMBER_WITH_UNIT.match(value) and \
                {"number", "integer"} & set(types):
            hint = "write a plain number; the unit is in the key's name"
        if error.schema.get("pattern") == MONTH_PATTERN or path == ("start",):
            want, hint = "a calendar month as YYYY-MM", _month_hint(value)
        return [at("E103", f"must be {want}, got {_describe(value)}", hint)]
    if kind == "enum":
        choices = ", ".join(str(c) for c in expected)
        hint = did_you_mean(value, map(str, expected)) if isinstance(value, str) else None
        return [at("E105", f"must be one of {choices}, got {_describe(value)}", hint)]
    if kind == "const":
        hint = None
        if path == ("apiVersion",):
            hint = f"this compiler reads apiVersion {expected}"
        return [at("E105", f"must be '{expected}', got {_describe(value)}", hint)]
    if kind == "pattern":
        if path == ("start",) and isinstance(value, str) and re.match(MONTH_PATTERN, value):
            # every month a plan names (a node's useful life end, a term's) must have four digits
            return [at("E106", f"start {value} is outside the months a plan names (1900-01 to 2999-12)",
                       "write the calendar month of the plan's month 0, e.g. 2027-01")]
        if expected == MONTH_PATTERN or path == ("start",):
            return [at("E106", f"bad month {_describe(value)}: a calendar month is YYYY-MM, "
                               "with the month 01 to 12", _month_hint(value))]
        if path and path[-1] == "region":
            return [at("E106", f"bad region name {_describe(value)}: use the provider's region "
                               "id, e.g. us-east-1, us-central1, eastus")]
        return [at("E106", f"bad name {_describe(value)}: use lowercase letters, digits and '-', "
                           "starting with a letter and ending with a letter or digit, "
                           "at most 63 characters", _name_hint(value))]
    if kind == "minItems":
        n = expected
        return [at("E107", f"must have at least {n} item{'s' if n != 1 else ''}, "
                           f"got {len(value)}")]
    if kind == "uniqueItems" and isinstance(value, list):
        dup = next((v for i, v in enumerate(value) if v in value[:i]), None)
        return [at("E107", f"items must be unique; {_describe(dup)} appears more than once")]
    if kind == "minLength":
        return [at("E107", "must not be empty")]
    return [at("E103", error.message)]


_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _unknown_key_hint(key: str, allowed: list[str], error: ValidationError,
                      root: dict) -> str | None:
    hint = did_you_mean(key, allowed)
    if hint:
        return hint
    # A key that belongs to the other branch of a discriminated mapping says so.
    defs = root.get("$defs", {})
    for branch, sibling, label in _SIBLINGS:
        if error.schema == defs.get(branch) and key in defs.get(sibling, {}).get("properties", {}):
            return f"'{key}' applies to {label}"
    if allowed == ["start_month"] and key == "deadline_days":
        return "an inference workload runs from start_month to the end of the horizon"
    return None


_SIBLINGS = (("cloudSite", "onPremSite", "sites of type on_prem"),
             ("edgeSite", "onPremSite", "sites of type on_prem (an edge location states max_boxes, power_kw)"),
             ("onPremSite", "cloudSite", "sites of type cloud"),
             ("trainingWorkload", "inferenceWorkload", "workloads of kind inference"),
             ("inferenceWorkload", "trainingWorkload", "workloads of kind training"))


def _name_hint(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    slug = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:63].strip("-")
    if slug and slug[0].isalpha():
        return f"try '{slug}'"
    return None


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month_hint(value: Any) -> str:
    """The YYYY-MM a bad month most likely meant: '2027-1', '2027/01', '2027-01-15', 'Jan 2027',
    '01/2027' -> "try '2027-01'"; otherwise the form to write."""
    text = str(value).strip().lower()
    year = re.search(r"\b(\d{4})\b", text)
    rest = text.replace(year.group(1), " ", 1) if year else ""
    month = None
    named = re.search(r"[a-z]{3,}", rest)
    if named and named.group(0)[:3] in _MONTH_NAMES:
        month = _MONTH_NAMES.index(named.group(0)[:3]) + 1
    elif year and text.startswith(year.group(1)):
        number = re.match(r"\D(\d{1,2})\b", text[4:])      # the month follows the year
        month = int(number.group(1)) if number else None
    else:
        number = re.match(r"(\d{1,2})\D", text)              # 01/2027: the month comes first
        month = int(number.group(1)) if number else None
    if year and month is not None and 1 <= month <= 12:
        return f"try '{year.group(1)}-{month:02d}'"
    return "write the year and the month, e.g. 2027-01 for January 2027"


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _describe(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _num(value)
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"'{text}'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


# ----------------------------------------------------------------------------- Spec building

def build_spec(doc: Document, data: dict, catalog: Catalog) -> Spec:
    """The frozen Spec from schema- and semantically-valid data, defaults filled."""
    policy = data.get("policy", {})
    return edge.expand(Spec(
        api_version=data["apiVersion"],
        name=data["name"],
        horizon_months=int(data["horizon_months"]),
        sites=tuple(_site(s, f"$.sites[{i}]", data.get("start"), catalog, int(data["horizon_months"]))
                    for i, s in enumerate(data["sites"]) if s["type"] != edge.EDGE),   # edge: expand()
        policy=Policy(
            placement=policy.get("placement", "hybrid"),
            allowed_gpus=_tuple(policy.get("allowed_gpus")),
            max_cloud_share=_float(policy.get("max_cloud_share")),
            max_instance_types_per_site=_int(policy.get("max_instance_types_per_site")),
            min_months_per_mix=_int(policy.get("min_months_per_mix")),
            max_spot_share=_float(policy.get("max_spot_share")),
            # absent: the default; null: lifted
            max_sites_per_service=_int(policy.get("max_sites_per_service", Policy.max_sites_per_service)),
            max_gpu_types_per_service=_int(policy.get("max_gpu_types_per_service",
                                                      Policy.max_gpu_types_per_service)),
            min_pool_months=_int(policy.get("min_pool_months", Policy.min_pool_months)),
            after_horizon=policy.get("after_horizon", "continues"),
            replan_min_saving_usd=float(policy.get("replan", {}).get("min_saving_usd", Policy.replan_min_saving_usd)),
            replan_min_saving_share=float(policy.get("replan", {}).get("min_saving_share",
                                                                      Policy.replan_min_saving_share)),
        ),
        workloads=tuple(_workload(w, f"$.workloads[{i}]")
                        for i, w in enumerate(data["workloads"])),
        sha256=hashlib.sha256(doc.source.text.encode("utf-8")).hexdigest(),
        start=data.get("start"),
    ), data, catalog)


def _site(s: dict, path: str, start: str | None, catalog: Catalog, horizon: int):
    if s["type"] == "cloud":
        return CloudSite(
            name=s["name"], provider=s["provider"], region=s["region"],
            pricing=tuple(s.get("pricing", ["on_demand"])),
            quotas={k: int(v) for k, v in sorted(s.get("quotas", {}).items())},
            reserved=_held(s.get("reserved", []), path, start),
            path=path)
    return OnPremSite(
        name=s["name"], power_kw=float(s["power_kw"]),
        electricity_usd_per_kwh=float(s["electricity_usd_per_kwh"]), pue=float(s["pue"]),
        max_racks=int(s["max_racks"]), rack_power_kw=_float(s.get("rack_power_kw")),
        max_gpus=_int(s.get("max_gpus")),
        owned=tuple(_owned(o, start, catalog, horizon) for o in s.get("owned", [])),
        existing_storage_tb=float(s.get("storage", {}).get("existing_tb", 0.0)),
        path=path)


def _owned(o: dict, start: str | None, catalog: Catalog, horizon: int) -> OwnedNodes:
    """Owned nodes; where `bought` is stated, the month of the horizon their useful life ends
    (semantic.py has checked that a start dates it)."""
    bought = o.get("bought")
    retires = None
    if bought is not None and start is not None:
        end = unit_costs.life_left(catalog.onprem_nodes[o["instance"]], bought, start)
        retires = end if end < horizon else None
    return OwnedNodes(o["instance"], int(o["nodes"]), bought, retires)


def _held(entries: list, path: str, start: str | None) -> tuple[HeldReservation, ...]:
    """A cloud site's commitments already bought that still cover a month of the horizon (one
    that has ended is a warning of semantic.py's, and left out here)."""
    held = []
    for j, r in enumerate(entries):
        until = month_number(r["until"]) - month_number(start)
        if until > 0:
            held.append(HeldReservation(r["instance"], int(r["nodes"]), until, r.get("term", "reserved_1y"),
                                        r["until"], f"{path}.reserved[{j}]"))
    return tuple(held)


def _workload(w: dict, path: str):
    common = dict(
        name=w["name"], model=_model(w["model"], w["name"]), data=_data(w.get("data")),
        sites=_tuple(w.get("sites")), pin=_pin(w.get("pin")), path=path)
    window = w.get("window", {})
    if w["kind"] == "training":
        ckpt = w.get("checkpoint", {})
        return TrainingWorkload(
            **common,
            window=TrainingWindow(int(window.get("start_month", 0)),
                                  _float(window.get("deadline_days")), window.get("every")),
            tokens=_float(w.get("tokens")), seq_len=int(w.get("seq_len", 4096)),
            samples=_int(w.get("samples")), epochs=_float(w.get("epochs")),
            precision=w.get("precision", "bf16"), optimizer=w.get("optimizer", "adamw"),
            interruptible=bool(w.get("interruptible", False)),
            checkpoint=Checkpoint(_interval(ckpt.get("interval_min")), int(ckpt.get("keep", 3))),
            orchestrator=w.get("orchestrator", "slurm"))
    traffic, slo = w["traffic"], w["slo"]
    if "latency_p99_ms" in slo:     # a vision model's service (semantic.py's E210 has checked the model)
        stated = ImageTraffic(float(traffic["peak_rps"]), float(traffic.get("growth_per_month", 0.0)))
        bounds = Slo(None, None, float(slo.get("availability", 0.99)), float(slo["latency_p99_ms"]),
                     headroom=float(slo.get("headroom", DEFAULT_SLO_HEADROOM)))
    else:
        stated = Traffic(float(traffic["peak_rps"]), int(traffic["input_tokens"]), int(traffic["output_tokens"]),
                         float(traffic.get("growth_per_month", 0.0)),
                         None if traffic.get("prefix_cache_hit") is None else float(traffic["prefix_cache_hit"]))
        bounds = Slo(float(slo["ttft_p99_ms"]), float(slo["tpot_p99_ms"]), float(slo.get("availability", 0.99)),
                     headroom=float(slo.get("headroom", DEFAULT_SLO_HEADROOM)))
    return InferenceWorkload(
        **common,
        traffic=stated,
        slo=bounds,
        window=InferenceWindow(int(window.get("start_month", 0))),
        quantization=w.get("quantization", "bf16"),
        orchestrator=w.get("orchestrator", "kubernetes"),
        speculative=_speculative(w.get("speculative")),
        disaggregation=w.get("disaggregation"))


def _speculative(s: Any) -> Speculative | None:
    if s is None:
        return None
    return Speculative(str(s["method"]), float(s["acceptance"]), int(s["draft_tokens"]))


def _model(m: Any, workload: str) -> str | InlineModel:
    if isinstance(m, str):
        return m
    return InlineModel(
        name=m.get("name", workload), arch=m["arch"], params_b=float(m["params_b"]),
        layers=int(m["layers"]), hidden=int(m["hidden"]), heads=int(m["heads"]),
        kv_heads=int(m["kv_heads"]), vocab=int(m["vocab"]), ffn_hidden=int(m["ffn_hidden"]),
        active_params_b=_float(m.get("active_params_b")), experts=_int(m.get("experts")),
        experts_per_token=_int(m.get("experts_per_token")))


def _data(d: dict | None) -> Data | None:
    if d is None:
        return None
    return Data(float(d.get("dataset_tb", 0.0)), d.get("home"))


def _pin(p: dict | None) -> Pin | None:
    if p is None:
        return None
    return Pin(gpu=p.get("gpu"), gpus=_int(p.get("gpus")), site=p.get("site"),
               pricing=p.get("pricing"), instance=p.get("instance"))


def _tuple(v: list | None) -> tuple | None:
    return None if v is None else tuple(v)


def _interval(v: Any) -> float | None:
    return None if v in (None, "auto") else float(v)


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def _int(v: Any) -> int | None:
    return None if v is None else int(v)
