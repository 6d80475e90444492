"""Published figures the performance model is calibrated and checked against, and the fit.

Each figure names its source (paper table, MLPerf round + submitter + system, vendor table) and
its half: FIT figures are the only ones `fit()` looks at; HOLDOUT figures are checked out of
sample. tests/test_estimate_calibration.py asserts the catalog's factors are what `fit()`
returns and that every figure, in both halves, is within tolerance; `python -m
benchmarks.calibrate` prints the table docs/performance-model.md shows.

Comparisons go through the product's own functions (training.best_step, the estimate of a run,
inference.best_batch) with the published configuration: the GPU count, the node and fabric, the
precision, the sequence length and the published global batch (the catalog's
global_batch_tokens is replaced by it), and for inference the input/output lengths and the
tensor-parallel size. The layout is the model's own choice, as it is for a user.

Error: model / published - 1 for throughput (tokens/s, TFLOP/s), and for time-to-train figures
model time / published time - 1, so a positive error is an optimistic model in both.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

from compiler.catalog import load_catalog
from compiler.catalog.model import Catalog, Factor
from compiler.estimate import inference, training
from compiler.estimate.build import llm_training_estimate
from compiler.estimate.options import Hardware
from compiler.spec import Checkpoint, TrainingWindow, TrainingWorkload

FIT, HOLDOUT = "fit", "holdout"
REFERENCE = "reference"   # shown in the doc, not checked: a figure an input of which is not published
TRAINING_TOLERANCE = 0.15    # training time (issue 15)
INFERENCE_TOLERANCE = 0.20   # inference throughput


@dataclass(frozen=True)
class TrainingFigure:
    key: str
    half: str
    cite: str
    model: str
    node: str                 # catalog on-prem node: its GPU and GPUs per node
    fabric: str               # catalog fabric (kind); node_gbps below overrides its rate
    gpus: int
    precision: str
    seq_len: int
    batch_seqs: int           # published global batch, sequences
    metric: str               # tokens_per_gpu_s | tflops_per_gpu | gpu_hours | minutes
    published: float
    tokens: float = 0.0       # for gpu_hours / minutes: tokens trained
    node_gbps: float = 3200.0

    @property
    def is_time(self) -> bool:
        return self.metric in ("gpu_hours", "minutes")


@dataclass(frozen=True)
class InferenceFigure:
    key: str
    half: str
    cite: str
    model: str
    gpu: str
    tp: int
    quant: str
    input_tokens: int
    output_tokens: int
    metric: str               # tokens_per_s (output tokens/s of one replica) | ttft_ms
    published: float
    tpot_ms: float = 1e9      # SLO the published run was held to (1e9: none, maximum load)
    ttft_ms: float = 1e9


L3 = "Llama Team, The Llama 3 Herd of Models (arXiv 2407.21783)"
NEMO = ("NVIDIA NeMo 24.07 performance summary, DGX-H100, FP8 (NVIDIA/NeMo "
        "docs/source/performance/performance_summary.md @ 8e3d65dcfe)")
MLPERF_T = "MLPerf Training, closed division, mlcommons/training_results_"
TRT = ("TensorRT-LLM perf-overview, 'Total Output Throughput' at maximum load, FP8 checkpoints "
       "(NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ 00f37686)")
NIM = "NVIDIA NIM LLM benchmarking, Llama-3.3-70B-Instruct fp8 TP2 on 2 x H100 80GB, 5000 in / 500 out"
MLPERF_I = ("MLPerf Inference v4.1, closed, llama2-70b-99 Offline, mlcommons/inference_results_v4.1 "
            "closed/<submitter>/results/<system>/llama2-70b-99/Offline/performance/run_1/mlperf_log_summary.txt")

TRAINING: tuple[TrainingFigure, ...] = (
    # ---- fit half ----
    TrainingFigure("llama3-405b-8k", FIT, f"{L3}, Table 4 row 1: 8,192 H100, TP8 CP1 PP16 DP64, 8K sequences, "
                   "16M tokens per batch: 430 TFLOPs/GPU, 43% BF16 MFU (400G RoCE)",
                   "llama-3-405b", "hgx-h100", "roce-400g", 8192, "bf16", 8192, 2048, "tflops_per_gpu", 430),
    TrainingFigure("nemo-gpt3-175b-512", FIT, f"{NEMO}: GPT3-175B, 512 GPUs, GBS 2048, seq 2048, TP4 PP8 VP6: "
                   "825 tokens/s/GPU", "gpt-3-175b", "dgx-h100", "infiniband-ndr", 512, "fp8", 2048, 2048,
                   "tokens_per_gpu_s", 825),
    TrainingFigure("nemo-llama3-70b-64", FIT, f"{NEMO}: LLAMA3-70B, 64 GPUs, GBS 128, seq 8192, TP4 PP4 CP2 VP5: "
                   "1524 tokens/s/GPU", "llama-3-70b", "dgx-h100", "infiniband-ndr", 64, "fp8", 8192, 128,
                   "tokens_per_gpu_s", 1524),
    TrainingFigure("nemo-llama2-7b-8", FIT, f"{NEMO}: LLAMA2-7B, 8 GPUs, GBS 128, seq 4096: 16934 tokens/s/GPU",
                   "llama-2-7b", "dgx-h100", "infiniband-ndr", 8, "fp8", 4096, 128, "tokens_per_gpu_s", 16934),
    TrainingFigure("mbridge-llama31-405b-1024", FIT, "NVIDIA Megatron-Bridge performance summary archive, NeMo "
                   "26.06 container, DGX-H100: LLAMA3.1_405B, 1024 GPUs, FP8, GBS 1536, seq 8192, TP8 PP8 CP2 "
                   "VP8: 326 tokens/s/GPU (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ 067f987)",
                   "llama-3-405b", "dgx-h100", "infiniband-ndr", 1024, "fp8", 8192, 1536, "tokens_per_gpu_s", 326),
    TrainingFigure("llama2-70b-a100", FIT, "Touvron et al., Llama 2 (arXiv 2307.09288): Table 2, 70B: 1,720,320 "
                   "A100-80GB GPU-hours; Table 1, 2T tokens, 4K context, 4M-token global batch; RSC InfiniBand "
                   "at 200 Gbps per endpoint. GPU count not published: 2,048 assumed",
                   "llama-2-70b", "dgx-a100", "infiniband-ndr", 2048, "bf16", 4096, 1024, "gpu_hours", 1_720_320,
                   tokens=2e12, node_gbps=1600),
    # ---- held out ----
    TrainingFigure("llama3-405b-16k", HOLDOUT, f"{L3}, Table 4 row 2: 16,384 H100, TP8 CP1 PP16 DP128, 8K "
                   "sequences, 16M tokens per batch: 400 TFLOPs/GPU, 41% BF16 MFU",
                   "llama-3-405b", "hgx-h100", "roce-400g", 16384, "bf16", 8192, 2048, "tflops_per_gpu", 400),
    TrainingFigure("llama31-405b-gpu-hours", HOLDOUT, "Llama 3.1 model card (meta-llama/llama-models "
                   "models/llama3_1/MODEL_CARD.md): 405B took 30.84M H100-80GB GPU-hours; 15.6T tokens "
                   f"({L3}, sec. 3.1), on 16,384 GPUs with 466 interruptions in 54 days (sec. 3.3.4). The run "
                   "is modelled at 8K sequences throughout (its batch ramp and 800B-token long-context stage "
                   "are not); the hours include every interruption and restart",
                   "llama-3-405b", "hgx-h100", "roce-400g", 16384, "bf16", 8192, 2048, "gpu_hours", 30.84e6,
                   tokens=15.6e12),
    TrainingFigure("nemo-gpt3-175b-128", HOLDOUT, f"{NEMO}: GPT3-175B, 128 GPUs, GBS 256, seq 2048, TP4 PP8 VP6: "
                   "716 tokens/s/GPU", "gpt-3-175b", "dgx-h100", "infiniband-ndr", 128, "fp8", 2048, 256,
                   "tokens_per_gpu_s", 716),
    TrainingFigure("nemo-llama3-8b-8", HOLDOUT, f"{NEMO}: LLAMA3-8B, 8 GPUs, GBS 128, seq 8192, CP2: 12273 "
                   "tokens/s/GPU", "llama-3-8b", "dgx-h100", "infiniband-ndr", 8, "fp8", 8192, 128,
                   "tokens_per_gpu_s", 12273),
    TrainingFigure("nemo-llama2-70b-64", HOLDOUT, f"{NEMO}: LLAMA2-70B, 64 GPUs, GBS 128, seq 4096, TP4 PP4 VP20: "
                   "1728 tokens/s/GPU", "llama-2-70b", "dgx-h100", "infiniband-ndr", 64, "fp8", 4096, 128,
                   "tokens_per_gpu_s", 1728),
    TrainingFigure("nemo-llama2-13b-16", HOLDOUT, f"{NEMO}: LLAMA2-13B, 16 GPUs, GBS 128, seq 4096, PP4 VP10: "
                   "8715 tokens/s/GPU", "llama-2-13b", "dgx-h100", "infiniband-ndr", 16, "fp8", 4096, 128,
                   "tokens_per_gpu_s", 8715),
    TrainingFigure("mlperf-v5.0-llama31-405b-8192", HOLDOUT, f"{MLPERF_T}v5.0, NVIDIA, "
                   "eos-dfw_n1024_ngc25.01_nemo: Llama 3.1 405B on 8,192 H100, FP8, GBS 1536, seq 8192, TP8 "
                   "PP8 CP2: runs of 19.638, 19.636, 19.682 min (run_stop - run_start in the logs, mean 19.652) "
                   "for 322,560 samples", "llama-3-405b", "dgx-h100", "infiniband-ndr", 8192, "fp8", 8192, 1536,
                   "minutes", 19.652, tokens=322_560 * 8192),
    TrainingFigure("mlperf-v4.0-gpt3-11616", HOLDOUT, f"{MLPERF_T}v4.0, NVIDIA, eos-dfw_n1452_ngc24.04_nemo: "
                   "GPT-3 175B on 11,616 H100, FP8, GBS 2904, seq 2048, TP4 PP6: runs of 3.451, 3.439, 3.444 "
                   "min (mean 3.445) for 1,231,110,144 tokens", "gpt-3-175b", "dgx-h100", "infiniband-ndr",
                   11616, "fp8", 2048, 2904, "minutes", 3.445, tokens=1_231_110_144),
    TrainingFigure("mlperf-v5.0-llama31-405b-h200-1024", HOLDOUT, f"{MLPERF_T}v5.0, Nebius, "
                   "nebius_soperator_8xH200_n128_ngc25.01_nemo: Llama 3.1 405B on 1,024 H200, GBS 1152, seq "
                   "8192, TP4 PP8 CP2: runs of 106.791, 106.66, 106.711 min (mean 106.72) for 276,480 samples",
                   "llama-3-405b", "hgx-h200", "infiniband-ndr", 1024, "fp8", 8192, 1152, "minutes", 106.72,
                   tokens=276_480 * 8192),
    TrainingFigure("llama2-7b-a100", FIT, "Llama 2 paper, Table 2, 7B: 184,320 A100-80GB GPU-hours for 2T "
                   "tokens, 4M-token batch (1,024 GPUs assumed)", "llama-2-7b", "dgx-a100", "infiniband-ndr",
                   1024, "bf16", 4096, 1024, "gpu_hours", 184_320, tokens=2e12, node_gbps=1600),
    TrainingFigure("llama2-13b-a100", HOLDOUT, "Llama 2 paper, Table 2, 13B: 368,640 A100-80GB GPU-hours for 2T "
                   "tokens, 4M-token batch (1,024 GPUs assumed)", "llama-2-13b", "dgx-a100", "infiniband-ndr",
                   1024, "bf16", 4096, 1024, "gpu_hours", 368_640, tokens=2e12, node_gbps=1600),
)

INFERENCE: tuple[InferenceFigure, ...] = (
    # ---- fit half ----
    InferenceFigure("trt-llama33-70b-h100-tp2-1000-1000", FIT, f"{TRT}: Llama 3.3 70B, H100 TP2, 1000/1000: 4,205",
                    "llama-3-70b", "H100", 2, "fp8", 1000, 1000, "tokens_per_s", 4205),
    InferenceFigure("trt-llama33-70b-h200-tp1-2048-2048", FIT, f"{TRT}: Llama 3.3 70B, H200 TP1, 2048/2048: 2,003",
                    "llama-3-70b", "H200", 1, "fp8", 2048, 2048, "tokens_per_s", 2003),
    InferenceFigure("trt-llama31-8b-h200-2048-2048", FIT, f"{TRT}: Llama 3.1 8B, H200 TP1, 2048/2048: 12,194",
                    "llama-3-8b", "H200", 1, "fp8", 2048, 2048, "tokens_per_s", 12194),
    InferenceFigure("trt-llama31-405b-h100-tp8-1000-1000", FIT, f"{TRT}: Llama 3.1 405B, H100 TP8, 1000/1000: "
                    "2,919", "llama-3-405b", "H100", 8, "fp8", 1000, 1000, "tokens_per_s", 2919),
    InferenceFigure("nim-llama33-70b-ttft-c1", FIT, f"{NIM}, NIM 1.8.0, concurrency 1: TTFT 406.77 ms",
                    "llama-3-70b", "H100", 2, "fp8", 5000, 500, "ttft_ms", 406.77),
    # ---- held out ----
    InferenceFigure("trt-llama33-70b-h200-tp1-1000-1000", HOLDOUT, f"{TRT}: Llama 3.3 70B, H200 TP1, 1000/1000: "
                    "2,909", "llama-3-70b", "H200", 1, "fp8", 1000, 1000, "tokens_per_s", 2909),
    InferenceFigure("trt-llama33-70b-h100-tp2-5000-500", HOLDOUT, f"{TRT}: Llama 3.3 70B, H100 TP2, 5000/500: 898",
                    "llama-3-70b", "H100", 2, "fp8", 5000, 500, "tokens_per_s", 898),
    InferenceFigure("trt-llama33-70b-h200-tp1-5000-500", HOLDOUT, f"{TRT}: Llama 3.3 70B, H200 TP1, 5000/500: 566",
                    "llama-3-70b", "H200", 1, "fp8", 5000, 500, "tokens_per_s", 566),
    InferenceFigure("trt-llama31-8b-h100-1000-1000", HOLDOUT, f"{TRT}: Llama 3.1 8B, H100 TP1, 1000/1000: 15,220",
                    "llama-3-8b", "H100", 1, "fp8", 1000, 1000, "tokens_per_s", 15220),
    InferenceFigure("trt-llama31-405b-h200-tp8-1000-1000", HOLDOUT, f"{TRT}: Llama 3.1 405B, H200 TP8, 1000/1000: "
                    "3,330", "llama-3-405b", "H200", 8, "fp8", 1000, 1000, "tokens_per_s", 3330),
    InferenceFigure("nim-llama33-70b-c25", HOLDOUT, f"{NIM}, NIM 1.8.0, concurrency 25: ITL 38.75 ms, 623.4 "
                    "tokens/s (that mean ITL asked as the p99 TPOT, times tpot_p99_multiplier)",
                    "llama-3-70b", "H100", 2, "fp8", 5000, 500, "tokens_per_s", 623.4, tpot_ms=38.75),
    InferenceFigure("nim-llama33-70b-c50", HOLDOUT, f"{NIM}, NIM 1.8.0, concurrency 50: ITL 59.73 ms, 814.37 "
                    "tokens/s", "llama-3-70b", "H100", 2, "fp8", 5000, 500, "tokens_per_s", 814.37, tpot_ms=59.73),
    InferenceFigure("mlperf-v4.1-llama2-70b-h100", REFERENCE, f"{MLPERF_I}, NVIDIA DGX-H100_H100-SXM-80GBx8_TRT: "
                    "24,524.9 tokens/s on 8 GPUs (per TP2 replica: / 4). Output 290 tokens per sample (tokens/s "
                    "/ samples/s); mean input 300 tokens assumed (not published)",
                    "llama-2-70b", "H100", 2, "fp8", 300, 290, "tokens_per_s", 24524.9 / 4),
    InferenceFigure("mlperf-v4.1-llama2-70b-h200", REFERENCE, f"{MLPERF_I}, Dell XE9680_H200_SXM_141GBx8_TRT (air "
                    "cooled, not NVIDIA's 1,000 W CTS system): 32,124.3 tokens/s on 8 GPUs (per TP1 replica: / 8); "
                    "lengths as above", "llama-2-70b", "H200", 1, "fp8", 300, 290, "tokens_per_s", 32124.3 / 8),
)


def with_factors(catalog: Catalog, **values: float) -> Catalog:
    """The catalog with some factors replaced (names with dots passed as a dict: **{'a.b': 1})."""
    factors = dict(catalog.factors)
    for name, value in values.items():
        old = factors[name]
        factors[name] = Factor(name, value, old.source, old.note)
    return dataclasses.replace(catalog, factors=factors)


def _hardware(f: TrainingFigure, catalog: Catalog) -> Hardware:
    n = catalog.onprem_nodes[f.node]
    return Hardware("dc", "on_prem", "on_prem", n.name, catalog.gpus[n.gpu], n.gpus, n.vcpus, f.fabric,
                    f.node_gbps, 1.0, None)


def training_value(f: TrainingFigure, catalog: Catalog) -> float:
    """The model's figure in the published metric."""
    hw = _hardware(f, catalog)
    model = catalog.models[f.model]
    cat = with_factors(catalog, global_batch_tokens=f.batch_seqs * f.seq_len)
    if f.is_time:
        w = TrainingWorkload(name="w", model=f.model, window=TrainingWindow(), tokens=f.tokens, seq_len=f.seq_len,
                             precision=f.precision, checkpoint=Checkpoint())
        est, _, why = llm_training_estimate(w, model, hw, f.gpus, False, cat)
        assert est is not None, why
        return est.duration_hours * (f.gpus if f.metric == "gpu_hours" else 60)
    fabric = training.Fabric(hw.fabric, hw.node_gbps, hw.gpus_per_node)
    step, _ = training.best_step(model, f.gpus, hw.gpu, fabric, f.seq_len, f.precision, "adamw", cat)
    assert step is not None, f.key
    if f.metric == "tflops_per_gpu":
        return step.mfu * training.peak_flops(hw.gpu, f.precision) / 1e12
    return step.tokens / step.seconds / f.gpus


def inference_value(f: InferenceFigure, catalog: Catalog) -> float:
    m, g = catalog.models[f.model], catalog.gpus[f.gpu]
    if f.metric == "ttft_ms":
        # At concurrency 1 there is no queue and no batch: one prefill plus one decode step.
        rep = inference.replica(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, catalog)
        pt = inference.serving_point(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, 1, rep, catalog)
        return pt.prefill_ms + pt.decode_ms
    tpot = f.tpot_ms * catalog.factor("tpot_p99_multiplier") if f.tpot_ms < 1e9 else f.tpot_ms
    pt, why = inference.best_batch(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, f.ttft_ms, tpot, catalog)
    assert pt is not None, why
    return pt.tokens_per_s


def error(f: TrainingFigure | InferenceFigure, catalog: Catalog) -> float:
    """model / published - 1 (throughput), published / model - 1 for times: > 0 is optimistic."""
    got = training_value(f, catalog) if isinstance(f, TrainingFigure) else inference_value(f, catalog)
    if (isinstance(f, TrainingFigure) and f.is_time) or getattr(f, "metric", "") == "ttft_ms":
        return f.published / got - 1
    return got / f.published - 1


# ---------------------------------------------------------------- the fit
# Each group of factors is fitted on the fit-half figures it affects, by grid search: the values
# with the smallest worst |log(model / published)|, ties to the smallest sum of squares, then to
# the first in grid order. fp8_mfu.H200 follows H100 (same SM), not a fit of its own.

def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    n = round((hi - lo) / step)
    return tuple(round(lo + i * step, 6) for i in range(n + 1))


GROUPS: tuple[tuple[dict[str, tuple[float, ...]], dict[str, str], tuple[str, ...]], ...] = (
    # (grid per factor, {tied factor: the fitted one it follows}, figure keys: fit half only)
    ({"base_mfu.H100.bf16": _grid(0.42, 0.58, 0.01), "fp8_mfu.H100": _grid(0.30, 0.60, 0.01),
      "tp_overlap": _grid(0.3, 0.9, 0.1)}, {"fp8_mfu.H200": "fp8_mfu.H100",
                                                    "base_mfu.H200.bf16": "base_mfu.H100.bf16"},
     ("llama3-405b-8k", "nemo-gpt3-175b-512", "nemo-llama3-70b-64", "nemo-llama2-7b-8", "mbridge-llama31-405b-1024")),
    ({"base_mfu.A100-80GB.bf16": _grid(0.40, 0.60, 0.01)}, {}, ("llama2-70b-a100", "llama2-7b-a100")),
    ({"decode_compute_efficiency": _grid(0.3, 0.8, 0.05), "decode_bandwidth_efficiency": _grid(0.7, 0.9, 0.1),
      "prefill_efficiency": _grid(0.35, 0.55, 0.05), "tp_allreduce_latency_us": _grid(8, 40, 8)}, {},
     ("trt-llama33-70b-h100-tp2-1000-1000", "trt-llama33-70b-h200-tp1-2048-2048", "trt-llama31-8b-h200-2048-2048",
      "trt-llama31-405b-h100-tp8-1000-1000", "nim-llama33-70b-ttft-c1")),
)

FIGURES = {f.key: f for f in (*TRAINING, *INFERENCE)}


def fit(catalog: Catalog) -> dict[str, float]:
    """The fitted value of every calibrated factor, from the fit half alone, group by group."""
    fitted: dict[str, float] = {}
    for grid, tied, keys in GROUPS:
        figures = [FIGURES[k] for k in keys]
        assert all(f.half == FIT for f in figures), "a fit may only look at fit-half figures"
        names = list(grid)
        best_key, best = None, None
        for values in itertools.product(*(grid[n] for n in names)):
            assign = dict(zip(names, values))
            assign.update({t: assign[src] for t, src in tied.items()})
            cat = with_factors(catalog, **fitted, **assign)
            logs = [math.log(1 + error(f, cat)) for f in figures]
            key = (round(max(abs(x) for x in logs), 9), round(sum(x * x for x in logs), 9))
            if best_key is None or key < best_key:
                best_key, best = key, assign
        fitted.update(best)
    return fitted


def calibrated_names() -> tuple[str, ...]:
    return tuple(n for grid, tied, _ in GROUPS for n in (*grid, *tied))


def checked() -> tuple[TrainingFigure | InferenceFigure, ...]:
    return tuple(f for f in FIGURES.values() if f.half != REFERENCE)


def tolerance(f: TrainingFigure | InferenceFigure) -> float:
    return TRAINING_TOLERANCE if isinstance(f, TrainingFigure) else INFERENCE_TOLERANCE



def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.4g}"


def table(catalog: Catalog) -> str:
    """The markdown table docs/performance-model.md shows: every figure, its half and error."""
    rows = ["| half | figure | GPUs | published | model | error |", "|---|---|---|---|---|---|"]
    for half in (FIT, HOLDOUT, REFERENCE):
        for f in FIGURES.values():
            if f.half != half:
                continue
            got = training_value(f, catalog) if isinstance(f, TrainingFigure) else inference_value(f, catalog)
            gpus = f.gpus if isinstance(f, TrainingFigure) else f"{f.tp} x {f.gpu}"
            gpus = f"{gpus:,} x {catalog.onprem_nodes[f.node].gpu}" if isinstance(f, TrainingFigure) else gpus
            rows.append(f"| {half} | {f.key} ({f.metric}) | {gpus} | {_num(f.published)} | {_num(got)} "
                        f"| {error(f, catalog):+.1%} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m tests.calibration: the fit and the table, for the docs
    cat = load_catalog()
    print("fitted on the fit half:", {k: v for k, v in fit(cat).items()})
    print(table(cat))
