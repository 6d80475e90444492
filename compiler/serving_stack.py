"""The serving stacks as data: compiler/serving_stack.yaml (for disaggregated LLM serving, the llm-d
inference scheduler and routing sidecar images, vLLM's KV-transfer connector, the endpoint picker's
configuration; for a vision model's service, Triton Inference Server's images by GPU architecture,
its model configuration and ports; each with its source and the day it was read) as frozen records
for the estimate and the render.

The file ships with the package; a missing key, a source key that does not resolve or an as_of
that is not a date stops with the file's name (a packaging error, not a user's).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Any

import yaml

from compiler.catalog.model import Gpu, ServingImage, SourceRef

DATA_FILE = "serving_stack.yaml"


@dataclass(frozen=True)
class Image:
    image: str
    version: str
    source: str

    @property
    def ref(self) -> str:
        return f"{self.image}:{self.version}"


@dataclass(frozen=True)
class Sidecar:
    image: Image
    connector: str                # the sidecar's --connector (the KV connector it drives)


@dataclass(frozen=True)
class KvTransfer:
    """vLLM's --kv-transfer-config, the same on prefill and decode servers."""

    kv_connector: str
    kv_role: str
    side_channel_port: int        # VLLM_NIXL_SIDE_CHANNEL_PORT
    source: str

    @property
    def config(self) -> str:
        """The flag's JSON value, compact as vLLM's docs write it."""
        return json.dumps({"kv_connector": self.kv_connector, "kv_role": self.kv_role}, separators=(",", ":"))


@dataclass(frozen=True)
class PickerPlugin:
    type: str
    parameters: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ProfileRef:
    plugin: str
    weight: int | None = None     # None: a filter or the picker


@dataclass(frozen=True)
class PickerConfig:
    plugins: tuple[PickerPlugin, ...]
    profiles: tuple[tuple[str, tuple[ProfileRef, ...]], ...]   # (profile name, its plugins)
    prefix_scorer: ProfileRef


@dataclass(frozen=True)
class TritonImage:
    image: ServingImage           # the container (vllm: (): it runs no vLLM)
    architectures: tuple[str, ...]   # the catalog's gpus.<GPU>.architecture names it runs on


@dataclass(frozen=True)
class Triton:
    """Triton Inference Server as a vision model's service runs it: the image for the GPU, the
    model's platform and accelerator (config.pbtxt), the server's ports, its health paths and the
    metric its autoscaler reads."""

    images: tuple[TritonImage, ...]   # newest first
    platform: str                 # config.pbtxt platform: onnxruntime_onnx
    accelerator: str              # ONNX Runtime's GPU execution accelerator: tensorrt
    precision_mode: str           # its precision: FP16
    http_port: int
    grpc_port: int
    metrics_port: int
    ready_path: str
    live_path: str
    hpa_metric: str
    config_source: str
    metric_source: str

    def image_for(self, gpu: Gpu) -> ServingImage | None:
        """The newest listed release that runs on the GPU's architecture; None: none does."""
        return next((i.image for i in self.images if gpu.architecture in i.architectures), None)


@dataclass(frozen=True)
class ServingStack:
    sources: tuple[SourceRef, ...]
    scheduler: Image
    sidecar: Sidecar
    kv_transfer: KvTransfer
    role_label: str
    picker: PickerConfig
    triton: Triton

    def source(self, key: str) -> SourceRef:
        return next(s for s in self.sources if s.key == key)


class StackDataError(ValueError):
    pass


def _image(d: dict[str, Any]) -> Image:
    return Image(str(d["image"]), str(d["version"]), str(d["source"]))


def _ref(d: dict[str, Any]) -> ProfileRef:
    w = d.get("weight")
    return ProfileRef(str(d["plugin"]), None if w is None else int(w))


def from_data(data: dict[str, Any]) -> ServingStack:
    """The stack of a parsed data file; StackDataError naming what is wrong."""
    try:
        sources = tuple(SourceRef(k, str(v["title"]), str(v["url"]), str(v["as_of"]), str(v.get("note", "")))
                        for k, v in data["sources"].items())
        side = data["sidecar"]
        kv = data["kv_transfer"]
        picker = data["picker"]
        stack = ServingStack(
            sources=sources, scheduler=_image(data["scheduler"]),
            sidecar=Sidecar(_image(side), str(side["connector"])),
            kv_transfer=KvTransfer(str(kv["kv_connector"]), str(kv["kv_role"]), int(kv["side_channel_port"]),
                                   str(kv["source"])),
            role_label=str(data["role_label"]),
            picker=PickerConfig(
                plugins=tuple(PickerPlugin(str(p["type"]), tuple(sorted((p.get("parameters") or {}).items())))
                              for p in picker["plugins"]),
                profiles=tuple((str(name), tuple(_ref(r) for r in refs)) for name, refs in picker["profiles"].items()),
                prefix_scorer=_ref(picker["prefix_scorer"])),
            triton=_triton(data["triton"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StackDataError(f"{DATA_FILE}: {type(exc).__name__}: {exc}") from None
    keys = {s.key for s in stack.sources}
    triton = stack.triton
    for used in (stack.scheduler.source, stack.sidecar.image.source, stack.kv_transfer.source, triton.config_source,
                 triton.metric_source, *(i.image.source for i in triton.images)):
        if used not in keys:
            raise StackDataError(f"{DATA_FILE}: source {used!r} is not under sources")
    for s in stack.sources:
        try:
            dt.date.fromisoformat(s.as_of)
        except ValueError:
            raise StackDataError(f"{DATA_FILE}: source {s.key}: as_of {s.as_of!r} is not a date") from None
    types = {p.type for p in stack.picker.plugins}
    for name, refs in stack.picker.profiles:
        missing = {r.plugin for r in refs} - types
        if missing:
            raise StackDataError(f"{DATA_FILE}: profile {name} names plugins not listed: {sorted(missing)}")
    return stack


def _triton(d: dict[str, Any]) -> Triton:
    ports, accel = d["ports"], d["accelerator"]
    images = tuple(TritonImage(ServingImage(str(i["image"]), str(i["version"]), str(i["runtime"]), str(i["driver"]),
                                            str(i["source"])), tuple(str(a) for a in i["architectures"]))
                   for i in d["images"])
    if not images:
        raise ValueError("triton.images is empty")
    return Triton(images, str(d["platform"]), str(accel["name"]), str(accel["precision_mode"]), int(ports["http"]),
                  int(ports["grpc"]), int(ports["metrics"]), str(d["ready_path"]), str(d["live_path"]),
                  str(d["hpa_metric"]), str(d["config_source"]), str(d["metric_source"]))


@lru_cache(maxsize=1)
def serving_stack() -> ServingStack:
    """The shipped stack (read once)."""
    text = files("compiler").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return from_data(yaml.safe_load(text))
