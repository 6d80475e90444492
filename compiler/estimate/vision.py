"""Vision training speed: FLOPs per sample from the catalog, training = 3x forward
(forward + backward at twice the forward), capped by a data-loading ceiling from the
host CPUs per GPU. Data parallel only: the gradient all-reduce over the fabric.

Vision serving (serving_point): one GPU per replica, requests batched by the server. Each image
costs its forward FLOPs at a share of the 16-bit tensor peak, t = F / (peak x eff); a batch of B
takes o + B t (o the per-batch overhead), which must stay within the p99 latency bound; the
replica serves B / (o + B t) images/s at the largest such B (the rate rises with B), at most the
server's largest batch. docs/performance-model.md, "Vision serving".
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog, Gpu, Model
from compiler.estimate import comms
from compiler.estimate.factors import factor, per
from compiler.estimate.memory import model_state_bytes
from compiler.estimate.training import peak_flops

TRAIN_OVER_FORWARD = 3  # backward costs twice the forward (Kaplan et al. 2020)


@dataclass(frozen=True)
class VisionRate:
    samples_per_s: float
    mfu: float
    memory_gb_per_gpu: float
    loader_bound: bool
    overhead_share: float
    # One step = a batch on every GPU at samples_per_s (gpus * batch / samples_per_s seconds),
    # and its terms, which add up to it.
    step_s: float = 0.0
    compute_s: float = 0.0
    exposed_dp_s: float = 0.0
    data_loading_s: float = 0.0   # waiting for the loader when it, not the GPUs, sets the rate

    def breakdown(self) -> dict[str, float]:
        return {"compute": self.compute_s, "exposed_dp": self.exposed_dp_s, "data_loading": self.data_loading_s}


def vision_rate(model: Model, gpus: int, gpu: Gpu, gpus_per_node: int, vcpus: int, fabric: str,
                node_gbps: float, precision: str, optimizer: str, catalog: Catalog) -> VisionRate | None:
    peak = peak_flops(gpu, precision)
    if peak is None or not model.gflops_per_sample:
        return None
    flops_sample = TRAIN_OVER_FORWARD * model.gflops_per_sample * 1e9
    batch = factor(catalog, "vision_batch_per_gpu")
    compute = batch * flops_sample / (peak * per(catalog, "vision_mfu", gpu.name))
    nvl = comms.scaleup_bw(gpu, catalog)
    bw = comms.scaleout_bw(node_gbps, gpus_per_node, fabric, catalog) if gpus > gpus_per_node and node_gbps > 0 else nvl
    grads = model.params_b * 1e9 * (4 if precision == "fp32" else 2)
    dp = comms.ring_allreduce_s(grads, gpus, bw)
    exposed_dp = comms.exposed(dp, factor(catalog, "dp_overlap"), compute * 2 / 3)
    step = compute + exposed_dp
    compute_rate = gpus * batch / step
    loader_rate = gpus * (vcpus / gpus_per_node) * factor(catalog, "dataloader_samples_per_s_per_vcpu")
    rate = min(compute_rate, loader_rate)
    mem = (model_state_bytes(model.params_b * 1e9, precision, optimizer, catalog) / 1e9
           + factor(catalog, "vision_activation_gb") + factor(catalog, "training_memory_buffer_gb"))
    paced = gpus * batch / rate if loader_rate < compute_rate else step
    return VisionRate(rate, rate * flops_sample / (gpus * peak), mem, loader_rate < compute_rate,
                      (step - compute) / step, paced, compute, exposed_dp, max(0.0, paced - step))


@dataclass(frozen=True)
class VisionServing:
    """One replica (one GPU) of a vision service at its latency bound."""
    batch: int
    images_per_s: float
    latency_ms: float          # the batch's latency, o + B t: what the p99 bound is checked on
    per_image_ms: float        # t


def per_image_s(model: Model, gpu: Gpu, catalog: Catalog) -> float | None:
    """t = forward FLOPs per image / (16-bit tensor peak x vision_inference_efficiency.<gpu>)."""
    peak = gpu.tflops.get("fp16") or gpu.tflops.get("bf16")
    if not peak or not model.gflops_per_sample:
        return None
    eff = per(catalog, "vision_inference_efficiency", gpu.name)
    return model.gflops_per_sample * 1e9 / (peak * 1e12 * eff)


def batch_latency_ms(model: Model, gpu: Gpu, batch: int, catalog: Catalog) -> float | None:
    """o + B t in ms: a batch of `batch` images on `gpu` (None where t is not known)."""
    t = per_image_s(model, gpu, catalog)
    if t is None:
        return None
    return (factor(catalog, "vision_inference_overhead_ms") * 1e-3 + batch * t) * 1e3


def serving_point(model: Model, gpu: Gpu, latency_p99_ms: float,
                  catalog: Catalog) -> tuple[VisionServing | None, str]:
    """The largest batch whose latency o + B t meets the bound (capped at the server's largest
    batch), and its images/s; None and why where batch 1 misses it. Exact: B / (o + B t) rises
    with B, so the largest batch that meets the bound has the most images/s."""
    t = per_image_s(model, gpu, catalog)
    if t is None:
        return None, f"no 16-bit tensor peak on {gpu.name} (or no FLOPs per image for {model.name})"
    o = factor(catalog, "vision_inference_overhead_ms") * 1e-3
    bound = latency_p99_ms * 1e-3
    most = int(factor(catalog, "vision_inference_max_batch"))
    if o + t > bound * (1 + 1e-12):
        return None, (f"misses the latency bound at batch 1: {(o + t) * 1e3:.1f} ms "
                      f"(p99 bound {latency_p99_ms:g} ms)")
    batch = max(1, min(most, int((bound - o) / t + 1e-9)))
    latency = o + batch * t
    return VisionServing(batch, batch / latency, latency * 1e3, t * 1e3), ""
