"""Typed, frozen records of the catalog. The figures themselves live in data/*.yaml.

Every record names a `source` (a key into the catalog's `sources` table, which gives
title, url and as_of) so each figure can be traced to where it was read.
Units are in the field names: _gb (10^9 bytes), _gbps (gigabits/s, networks),
_gb_s (gigabytes/s, memory and storage bandwidth), _usd, _kw, _w.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping


@dataclass(frozen=True)
class SourceRef:
    key: str
    title: str
    url: str
    as_of: str  # ISO date the figure was read
    note: str = ""  # e.g. "dense figures: half the datasheet's sparsity numbers"


@dataclass(frozen=True)
class ServingImage:
    """The inference server image services on a GPU run, and what it needs of the host."""

    image: str                    # repository: vllm/vllm-openai
    version: str                  # tag: v0.10.1.1
    runtime: str                  # what it is built on: CUDA 12.8, ROCm 6.4.1
    driver: str                   # the host driver that runtime needs, in words
    source: str
    # A serving image: the vLLM release it runs, (0, 10, 1, 1); the server's flags follow it.
    # () where none is named (a training image, or an overlay's serving image that states none).
    vllm: tuple[int, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.image}:{self.version}"


@dataclass(frozen=True)
class GkeDriver:
    """The gpu_driver_version a GKE node pool of a GPU asks for: the branch that meets what its
    images need of the host."""

    version: str                  # DEFAULT | LATEST | INSTALLATION_DISABLED (GKE's names)
    source: str


@dataclass(frozen=True)
class Gpu:
    name: str                     # H100, A100-80GB, MI300X ...
    vendor: str
    memory_gb: float
    memory_bandwidth_gb_s: float  # HBM/GDDR, GB/s
    nvlink_gb_s: float            # per-GPU scale-up bandwidth (bidirectional), 0 if PCIe only
    tdp_w: float
    tflops: Mapping[str, float]   # dense peak by precision: fp32, tf32, bf16, fp16, fp8, int8
    source: str
    architecture: str = ""        # as the datasheet names it: hopper, blackwell, cdna3 ...
    serving: ServingImage | None = None   # None: an overlay's GPU that names no image
    training: ServingImage | None = None  # the training image (JobSet trainer); None: none named
    gke_driver: GkeDriver | None = None   # a GKE node pool's driver choice; None: GCP sells none


PRICE_OPTIONS = ("on_demand", "spot", "reserved_1y", "reserved_3y")   # an instance price row's figures


@dataclass(frozen=True)
class InstancePrice:
    region: str
    on_demand: float              # USD per node-hour
    spot: float | None
    reserved_1y: float | None     # effective USD per node-hour over the term
    reserved_3y: float | None
    source: str
    estimated: tuple[str, ...] = ()   # options the source did not give (estimates kept); see catalog refresh

    def get(self, option: str) -> float | None:
        return getattr(self, option)


@dataclass(frozen=True)
class Accelerator:
    """A provider's name for an instance's GPUs where its API asks for one (GCP's
    `guest_accelerators.type`, e.g. nvidia-b200)."""

    type: str
    source: str


@dataclass(frozen=True)
class NcclTopology:
    """The NCCL topology file a provider's HPC image installs for a VM size (Azure ND-series:
    /opt/microsoft/ndv5-topo.xml), which its training jobs point NCCL_TOPO_FILE at."""

    file: str
    source: str


@dataclass(frozen=True)
class CloudInstance:
    name: str                     # p5.48xlarge
    provider: str                 # aws | gcp | azure
    gpu: str
    gpus: int
    vcpus: int
    ram_gb: float
    fabric: str                   # efa | gpudirect-tcpx | gpudirect-tcpxo | gpudirect-rdma | infiniband | ethernet
    network_gbps: float           # per node, scale-out
    prices: tuple[InstancePrice, ...]
    source: str
    sockets: int = 2
    local_nvme_tb: float = 0.0
    accelerator: Accelerator | None = None   # GCP: the guest accelerator type its API takes
    nccl_topology: NcclTopology | None = None   # Azure ND-series: the image's NCCL topology file
    nvlink_domain_gpus: int | None = None   # GPUs one NVLink domain joins where more than the
    # instance's own (GB200 NVL72: 72, across 18 four-GPU instances); None: the instance's GPUs

    @property
    def nvlink_domain(self) -> int:
        """GPUs one NVLink domain joins: the rack-scale domain where the catalog gives one, else
        the instance's own GPUs."""
        return self.nvlink_domain_gpus or self.gpus

    @property
    def accelerator_type(self) -> str:
        return self.accelerator.type if self.accelerator else ""

    def price_row(self, region: str) -> InstancePrice | None:
        for p in self.prices:
            if p.region == region:
                return p
        return None

    def price(self, region: str, option: str) -> float | None:
        row = self.price_row(region)
        return None if row is None else row.get(option)

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(p.region for p in self.prices)


@dataclass(frozen=True)
class OnPremNode:
    name: str                     # dgx-h100, hgx-h200 ...
    gpu: str
    gpus: int
    vcpus: int
    sockets: int
    ram_gb: float
    capex_usd: float
    power_kw: float               # at load, per node
    rack_units: int
    useful_life_years: float
    support_usd_per_year: float
    source: str
    fabrics: tuple[str, ...] = ("infiniband-ndr", "roce-400g", "ethernet-100g")
    edge: bool = False            # an edge box: bought only at an edge site's locations


@dataclass(frozen=True)
class Fabric:
    name: str                     # infiniband-ndr | roce-400g | ethernet-100g
    kind: str                     # infiniband | roce | ethernet
    port_gbps: float
    ports_per_node: int           # rails: 8 x 400G for an 8-GPU HGX node
    cost_per_port_usd: float      # NIC + optic + cable share per node port
    switch_radix: int
    switch_cost_usd: float
    switch_power_kw: float
    source: str

    @property
    def node_gbps(self) -> float:
        return self.port_gbps * self.ports_per_node


@dataclass(frozen=True)
class StorageTier:
    name: str                     # fsx-lustre, filestore, parallelstore, managed-lustre, onprem-lustre, onprem-nfs
    provider: str                 # aws | gcp | azure | on_prem
    usd_per_tb_month: float       # cloud; for on_prem, amortized support + power
    capex_usd_per_tb: float       # on_prem purchase; 0 for cloud
    throughput_gb_s_per_tb: float
    min_tb: float
    source: str


@dataclass(frozen=True)
class Egress:
    provider: str                 # aws | gcp | azure | on_prem
    usd_per_gb: float
    source: str


@dataclass(frozen=True)
class Model:
    name: str
    family: str                   # llm | vision
    arch: str                     # dense | moe | cnn | vit
    params_b: float               # total parameters, billions
    source: str
    active_params_b: float | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None
    ffn_hidden: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    gflops_per_sample: float | None = None   # vision: forward pass at the reference resolution
    image_size: int | None = None
    head_width: int | None = None           # a head's width where it is not hidden / heads (catalog head_dim)
    # Multi-head latent attention (DeepSeek-V2/V3/R1, Kimi K2): each layer caches one compressed
    # latent of kv_lora_rank values plus a shared rotary key of qk_rope_head_dim per token; queries
    # and keys are qk_nope_head_dim + qk_rope_head_dim wide per head, values v_head_dim. None: not MLA.
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None

    @property
    def active_b(self) -> float:
        return self.active_params_b if self.active_params_b is not None else self.params_b

    @property
    def head_dim(self) -> int:
        if self.head_width:
            return self.head_width
        assert self.hidden and self.heads
        return self.hidden // self.heads

    @property
    def is_mla(self) -> bool:
        return bool(self.kv_lora_rank)

    @property
    def attention_width(self) -> int:
        """Query heads x head width: the width attention's score and value products run at
        (hidden for most models; Qwen3's 64 heads of 128 make 8,192 at hidden 4,096). The training
        model counts MLA at this width too (hidden); prefill uses mha_attention_width."""
        return self.heads * self.head_width if self.head_width and self.heads else self.hidden

    @property
    def mha_attention_width(self) -> int:
        """The attention width of an unabsorbed forward pass (prefill). Under MLA that is MHA whose
        scores run at the query/key width (nope + rope) and whose values at v_head_dim: the mean
        of the two, per head (DeepSeek-V3: 128 x (192 + 128) / 2 = 20,480 at hidden 7,168);
        attention_width for every other model."""
        if self.is_mla and self.heads:
            qk = (self.qk_nope_head_dim or 0) + (self.qk_rope_head_dim or 0)
            return self.heads * (qk + (self.v_head_dim or qk)) // 2
        return self.attention_width

    @property
    def kv_head_values(self) -> int:
        """K and V values of one KV head per token as attention reads them unabsorbed (training,
        prefill): 2 x head_dim, or under MLA the decompressed key (nope + rope) and value."""
        if self.is_mla:
            return (self.qk_nope_head_dim or 0) + (self.qk_rope_head_dim or 0) + (self.v_head_dim or 0)
        return 2 * self.head_dim

    @property
    def kv_values_per_token_layer(self) -> int:
        """Values one token leaves in one layer's KV cache: K and V of each KV head
        (2 x kv_heads x head_dim), or MLA's latent and its rotary key (kv_lora_rank + qk_rope_head_dim,
        576 for DeepSeek-V3)."""
        if self.is_mla:
            return (self.kv_lora_rank or 0) + (self.qk_rope_head_dim or 0)
        return 2 * (self.kv_heads or self.heads or 1) * self.head_dim


@dataclass(frozen=True)
class Factor:
    """A named efficiency factor or model constant, with its source."""

    name: str
    value: float
    source: str
    note: str = ""


@dataclass(frozen=True)
class Catalog:
    version: str
    sources: Mapping[str, SourceRef]
    gpus: Mapping[str, Gpu]
    instances: Mapping[str, CloudInstance]
    onprem_nodes: Mapping[str, OnPremNode]
    fabrics: Mapping[str, Fabric]
    storage: Mapping[str, StorageTier]
    egress: Mapping[str, Egress]
    models: Mapping[str, Model]
    factors: Mapping[str, Factor] = field(default_factory=dict)

    def factor(self, name: str) -> float:
        return self.factors[name].value

    @cached_property
    def factor_values(self) -> Mapping[str, float]:
        """Every factor's value by name: estimate.factors.factor reads these millions of times per
        large compile (derived once from `factors`; not a field, so equality is unchanged)."""
        return {name: float(f.value) for name, f in self.factors.items()}
