"""Communication: collective times over NVLink or the scale-out fabric.

Ring all-reduce moves 2(n-1)/n of the buffer through each GPU's link (Patarasuk & Yuan);
all-gather and reduce-scatter move (n-1)/n each. Bandwidths are per GPU, in bytes/s, and
already multiplied by an achieved-over-peak efficiency from the catalog.
"""

from __future__ import annotations

from compiler.catalog.model import Catalog, Gpu
from compiler.estimate.factors import factor

FABRIC_KIND = {  # instance / on-prem fabric name -> efficiency family
    "efa": "efa", "gpudirect-tcpx": "gpudirect", "gpudirect-tcpxo": "gpudirect",
    "gpudirect-rdma": "gpudirect", "infiniband": "infiniband", "infiniband-ndr": "infiniband",
    "roce-400g": "roce", "roce": "roce", "ethernet": "ethernet", "ethernet-100g": "ethernet",
}


def ring_allreduce_s(nbytes: float, n: int, bw: float) -> float:
    """2(n-1)/n * bytes / bandwidth."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (n - 1) / n * nbytes / bw


def all_to_all_s(nbytes: float, n: int, bw: float) -> float:
    """Each GPU sends (n-1)/n of its buffer away."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return (n - 1) / n * nbytes / bw


def domain_all_to_all_s(nbytes: float, n: int, domain: int, scaleup: float, scaleout: float) -> float:
    """An all-to-all over n GPUs in NVLink domains of `domain` GPUs (a node, or a GB200 NVL72 rack):
    each GPU sends (n-1)/n of its buffer, (min(n, domain) - 1)/n of it over NVLink to the GPUs of its
    own domain and (n - domain)/n over the scale-out fabric (its rail, `scaleout` bytes/s), both at
    once, so the slower share sets the time (DeepEP's kernels: NVLink within a node, RDMA across).
    Within one domain (n <= domain) it is all_to_all_s over NVLink."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    inside = min(n, domain)
    near = (inside - 1) / n * nbytes / scaleup
    far = (n - inside) / n * nbytes / scaleout if n > inside else 0.0
    return max(near, far)


def scaleup_bw(gpu: Gpu, catalog: Catalog) -> float:
    """Per-GPU one-direction NVLink bandwidth (catalog gives bidirectional), or PCIe."""
    if gpu.nvlink_gb_s > 0:
        return gpu.nvlink_gb_s / 2 * 1e9 * factor(catalog, "nvlink_efficiency")
    return factor(catalog, "pcie_bandwidth_gb_s") * 1e9


def network_efficiency(fabric: str, catalog: Catalog) -> float:
    kind = FABRIC_KIND.get(fabric, "ethernet")
    return factor(catalog, f"network_efficiency.{kind}", "network_efficiency.ethernet")


def scaleout_bw(node_gbps: float, gpus_per_node: int, fabric: str, catalog: Catalog) -> float:
    """Per-GPU share of the node's scale-out bandwidth (one rail per GPU), bytes/s."""
    return node_gbps * 1e9 / 8 / gpus_per_node * network_efficiency(fabric, catalog)


def pipeline_bubble(p: int, m: int, v: int = 1) -> float:
    """Share of a step lost to the pipeline bubble: (p-1)/(v*m + p-1) (Narayanan et al.)."""
    if p <= 1:
        return 0.0
    return (p - 1) / (v * m + p - 1)


def exposed(comm_s: float, overlap: float, hideable_s: float) -> float:
    """Communication left on the critical path: a share `overlap` of it may hide behind
    `hideable_s` of compute, never more than that compute."""
    hidden = min(overlap * comm_s, hideable_s)
    return comm_s - hidden
