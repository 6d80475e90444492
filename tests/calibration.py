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
GAP = "gap"               # held out and outside the tolerance: shown with its error and why, a known limit
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
    metric: str               # tokens_per_gpu_s | tflops_per_gpu | tflops_causal | gpu_hours | minutes
    published: float
    tokens: float = 0.0       # for gpu_hours / minutes: tokens trained
    node_gbps: float = 3200.0
    balanced: bool = False    # MoE routing forced even (benchmarks): no busiest rank (moe_imbalance 1)
    gpu: str = ""             # the node's GPU, where not the catalog node's (GB200 racks)
    gpus_per_node: int = 0    # GPUs one NVLink domain joins, where not the node's (GB200: the 64 a job
                              # uses of an NVL72 rack)
    model_overrides: tuple[tuple[str, float], ...] = ()   # the benchmark's variant of the catalog model
                              # (MLPerf's gpt-oss-20b trains with the Llama 3.1 tokenizer: its vocab and
                              # parameter counts)

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
    slo_p99: bool = False     # tpot_ms is already a p99 bound (MLPerf Server); else a published mean
                              # inter-token latency, asked as the p99 TPOT times tpot_p99_multiplier
    ep: bool = False          # attention data parallel over the tp GPUs, experts expert parallel
    max_batch: int = 0        # the engine's limit on sequences in flight on the replica (0: none stated)
    output_cv: float = 0.0    # spread of the run's output lengths (std / mean; 0: all one length)
    kv_cache: str = ""        # the KV cache's precision where the run's is not the catalog's pairing
    # Wide expert parallelism (tp GPUs wider than one NVLink domain): the scale-out fabric between the
    # domains (node_gbps 0: none, the replica within one domain), the GPUs per node and per NVLink
    # domain (0: the node), and whether the engine overlaps the all-to-alls with a second micro-batch
    node_gbps: float = 0.0
    fabric: str = "infiniband"
    gpus_per_node: int = 8
    nvlink_domain: int = 0
    dual_batch: bool = False
    gpu_overrides: tuple[tuple[str, float], ...] = ()   # the run's variant of the catalog GPU (H800: an
                              # H100 with its NVLink cut to 400 GB/s)


L3 = "Llama Team, The Llama 3 Herd of Models (arXiv 2407.21783)"
NEMO = ("NVIDIA NeMo 24.07 performance summary, DGX-H100, FP8 (NVIDIA/NeMo "
        "docs/source/performance/performance_summary.md @ 8e3d65dcfe)")
MLPERF_T = "MLPerf Training, closed division, mlcommons/training_results_"
TRT = ("TensorRT-LLM perf-overview, 'Total Output Throughput' at maximum load, FP8 checkpoints "
       "(NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ 00f37686)")
NIM = "NVIDIA NIM LLM benchmarking, Llama-3.3-70B-Instruct fp8 TP2 on 2 x H100 80GB, 5000 in / 500 out"
MLPERF_I = ("MLPerf Inference v4.1, closed, llama2-70b-99 Offline, mlcommons/inference_results_v4.1 "
            "closed/<submitter>/results/<system>/llama2-70b-99/Offline/performance/run_1/mlperf_log_summary.txt")
# MLPerf Inference datasets: the mean prompt of each (tok_input_length of the MLCommons dataset pickles, per
# prompt in openshift-psap/performance-dashboard mlperf-data/summaries/<benchmark>.csv @ 7100702). Outputs are
# each result's own: the TOKENS_PER_SAMPLE its accuracy run logs, or tokens/s / samples/s of its log.
LENGTHS = "openshift-psap/performance-dashboard mlperf-data/summaries @ 7100702"
ORCA_IN = 222      # llama2-70b: 24,576 OpenOrca prompts, mean 222.3, median 152, max 1,021
L405_IN = 9429     # llama3.1-405b: 8,313 prompts, mean 9,428.6, median 10,112, max 19,988
MIX_IN = 427       # mixtral-8x7b: 15,000 prompts (OpenOrca, GSM8K, MBXP), mean 427.4
DSR1_IN = 804      # deepseek-r1: 4,388 prompts, mean 803.8, max 3,140
# The spread of each dataset's reference outputs (standard deviation over mean, output_length of the
# same summaries), taken as the spread of a result's own outputs, whose mean its log gives: it weights
# the batch's mean context (inference.context_tokens).
ORCA_CV = 0.787    # llama2-70b: mean 218.9, sd 172.3
L405_CV = 0.381    # llama3.1-405b: mean 684.7, sd 260.8
MIX_CV = 0.778     # mixtral-8x7b: mean 144.8, sd 112.7
DSR1_CV = 1.253    # deepseek-r1: mean 4,043.4, sd 5,064.8, max 32,768

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

MB = ("NVIDIA Megatron-Bridge performance summary archive (NVIDIA-NeMo/Megatron-Bridge "
      "docs/performance-summary-archive.md @ 067f987), NeMo {} container, {}: MoE rows force-balance the routing")
MZ = ("NVIDIA Megatron-MoE-ModelZoo, best_practice/qwen3/readme.md @ e865051 (yanring/Megatron-MoE-ModelZoo): "
      "Qwen3-235B-A22B on 256 H100 (32 nodes, IB 8x50 GB/s), BF16, DeepEP, TP4 PP8 VPP4 EP8, GBS 256, dropless")
LS = ("NVIDIA NeMo long-sequence performance (NVIDIA/NeMo docs/source/performance/performance_long_sequence.md "
      "@ 8cfedd7), LLAMA2-7B FP8 on DGX-H100, NeMo 24.03.01. Shown, not held to the tolerance: these are early-2024 "
      "attention kernels, about 0.26 of the bf16 peak where the 2026 Megatron-Core runs the catalog is fitted to "
      "reach 0.45; the TFLOPS count the full attention products (NeMo's formula until August 2025)")
NEMO_B200 = ("NVIDIA NeMo 25.02 performance summary, DGX-B200 (docs.nvidia.com/nemo-framework/user-guide/25.02/"
             "performance/performance_summary.html; the page lists the 8x22B row's GBS and MBS swapped, the "
             "launch recipes give GBS 64, MBS 1); MoE rows force-balance the routing")
LS8 = ("NVIDIA NeMo long-sequence performance (NVIDIA/NeMo docs/source/performance/performance_long_sequence.md "
       "@ 14d427f, where GPUs = TP x DP x CP), LLAMA3-8B FP8 on DGX-B200, NeMo 25.04.rc2")

MOE_TRAINING: tuple[TrainingFigure, ...] = (
    # ---- fit half ----
    TrainingFigure("mbridge-deepseek-v3-h100-1024", FIT, MB.format("25.09", "DGX-H100") + ": DeepSeekV3 (dropless), "
                   "1024 GPUs, GBS 8192, MBS 1, seq 4096, TP2 PP8 VP4 EP64, FP8: 1297 tokens/s/GPU",
                   "deepseek-v3", "dgx-h100", "infiniband-ndr", 1024, "fp8", 4096, 8192, "tokens_per_gpu_s", 1297,
                   balanced=True),
    TrainingFigure("mbridge-qwen3-30b-h100-16", REFERENCE, MB.format("26.04.01", "DGX-H100") + ": Qwen3_30B_a3B, 16 "
                   "GPUs, FP8, GBS 1024, MBS 1, seq 4096, EP16: 8960 tokens/s/GPU. Not held to the tolerance: the same "
                   "run is published at 5,275 (25.11), 5,113 (26.02), 8,960 (26.04.01) and 8,826 (26.06)", "qwen3-30b-a3b", "dgx-h100",
                   "infiniband-ndr", 16, "fp8", 4096, 1024, "tokens_per_gpu_s", 8960, balanced=True),
    TrainingFigure("mz-qwen3-235b-16k", FIT, f"{MZ}, Long Context: seq 16384, TP4 CP1: 295 TFLOPS (forced balance)",
                   "qwen3-235b-a22b", "dgx-h100", "infiniband-ndr", 256, "bf16", 16384, 256, "tflops_causal", 295,
                   balanced=True),
    TrainingFigure("mz-qwen3-235b-64k", FIT, f"{MZ}, Long Context: seq 65536, TP4 CP4: 368 TFLOPS (forced balance)",
                   "qwen3-235b-a22b", "dgx-h100", "infiniband-ndr", 256, "bf16", 65536, 256, "tflops_causal", 368,
                   balanced=True),
    TrainingFigure("mbridge-llama3-8b-b200-8", FIT, MB.format("25.11", "DGX-B200") + ": LLAMA3_8B, 8 GPUs, FP8-CS, "
                   "GBS 128, MBS 2, seq 8192: 30624 tokens/s/GPU", "llama-3-8b", "hgx-b200", "infiniband-ndr", 8,
                   "fp8", 8192, 128, "tokens_per_gpu_s", 30624),
    TrainingFigure("mbridge-llama31-405b-b200-128", FIT, MB.format("25.11", "DGX-B200") + ": LLAMA3.1_405B, 128 "
                   "GPUs, FP8-CS, GBS 64, seq 8192, TP4 PP8 CP2 VP8: 661 tokens/s/GPU", "llama-3-405b", "hgx-b200",
                   "infiniband-ndr", 128, "fp8", 8192, 64, "tokens_per_gpu_s", 661),
    # ---- held out ----
    TrainingFigure("mbridge-qwen3-235b-h100-256", FIT, MB.format("26.04.01", "DGX-H100") + ": Qwen3_235B_a22B, "
                   "256 GPUs, FP8, GBS 8192, seq 4096, TP2 PP8 VP4 EP32: 1712 tokens/s/GPU", "qwen3-235b-a22b",
                   "dgx-h100", "infiniband-ndr", 256, "fp8", 4096, 8192, "tokens_per_gpu_s", 1712, balanced=True),
    TrainingFigure("mz-qwen3-235b-h100-bf16", FIT, f"{MZ.split(', BF16')[0]}, BF16, cross-node EP: TP2 PP8 VPP4 "
                   "EP32, GBS 2048, seq 4096, step 19.7 s (2048 x 4096 / 19.7 / 256 = 1,663 tokens/s/GPU)",
                   "qwen3-235b-a22b", "dgx-h100", "infiniband-ndr", 256, "bf16", 4096, 2048, "tokens_per_gpu_s",
                   2048 * 4096 / 19.7 / 256),
    TrainingFigure("mbridge-deepseek-v3-b200-256", HOLDOUT, MB.format("26.04.01", "DGX-B200") + ": DeepSeekV3, 256 "
                   "GPUs, MXFP8, GBS 4096, seq 4096, PP8 VP2 EP32: 3328 tokens/s/GPU (the same benchmark: 2,265 in 25.09, "
                   "2,689 in 26.02)", "deepseek-v3", "hgx-b200",
                   "infiniband-ndr", 256, "fp8", 4096, 4096, "tokens_per_gpu_s", 3328, balanced=True),
    TrainingFigure("mbridge-qwen3-235b-b200-256", HOLDOUT, MB.format("26.04.01", "DGX-B200") + ": Qwen3_235B_a22B, "
                   "256 GPUs, MXFP8, GBS 8192, seq 4096, PP8 EP8: 3776 tokens/s/GPU", "qwen3-235b-a22b", "hgx-b200",
                   "infiniband-ndr", 256, "fp8", 4096, 8192, "tokens_per_gpu_s", 3776, balanced=True),
    TrainingFigure("mz-qwen3-235b-32k", HOLDOUT, f"{MZ}, Long Context: seq 32768, TP4 CP2: 335 TFLOPS (forced "
                   "balance)", "qwen3-235b-a22b", "dgx-h100", "infiniband-ndr", 256, "bf16", 32768, 256,
                   "tflops_causal", 335, balanced=True),
    TrainingFigure("mz-qwen3-235b-128k", HOLDOUT, f"{MZ}, Long Context: seq 131072, TP4 CP8: 389 TFLOPS (forced "
                   "balance)", "qwen3-235b-a22b", "dgx-h100", "infiniband-ndr", 256, "bf16", 131072, 256,
                   "tflops_causal", 389, balanced=True),
    TrainingFigure("nemo-llama2-7b-32k", REFERENCE, f"{LS}: 32K on 32 GPUs, batch 128, TP2 DP8 CP2: 610 TFLOPS/GPU",
                   "llama-2-7b", "dgx-h100", "infiniband-ndr", 32, "fp8", 32768, 128, "tflops_per_gpu", 610),
    TrainingFigure("nemo-llama2-7b-256k", REFERENCE, f"{LS}: 256K on 256 GPUs, batch 16, TP4 DP8 CP8: 549 TFLOPS/GPU",
                   "llama-2-7b", "dgx-h100", "infiniband-ndr", 256, "fp8", 262144, 16, "tflops_per_gpu", 549),
    TrainingFigure("nemo-llama2-7b-64k", REFERENCE, f"{LS}: 64K on 64 GPUs, batch 64, TP4 DP8 CP2: 574 TFLOPS/GPU",
                   "llama-2-7b", "dgx-h100", "infiniband-ndr", 64, "fp8", 65536, 64, "tflops_per_gpu", 574),
    TrainingFigure("nemo-llama2-7b-128k", REFERENCE, f"{LS}: 128K on 128 GPUs, batch 32, TP4 DP8 CP4: 555 TFLOPS/GPU",
                   "llama-2-7b", "dgx-h100", "infiniband-ndr", 128, "fp8", 131072, 32, "tflops_per_gpu", 555),
    TrainingFigure("nemo-llama3-8b-b200-64k", FIT, f"{LS8}: 64K on 16 GPUs, batch 64, TP1 DP4 CP4: 1,600 TFLOPS/GPU",
                   "llama-3-8b", "hgx-b200", "infiniband-ndr", 16, "fp8", 65536, 64, "tflops_per_gpu", 1600),
    TrainingFigure("nemo-llama3-8b-b200-256k", FIT, f"{LS8}: 256K on 64 GPUs, batch 16, TP4 DP4 CP4: 1,590 "
                   "TFLOPS/GPU", "llama-3-8b", "hgx-b200", "infiniband-ndr", 64, "fp8", 262144, 16, "tflops_per_gpu",
                   1590),
    TrainingFigure("mbridge-llama3-70b-gb200-nvfp4", FIT, MB.format("26.04.01", "DGX-GB200 (NVL72)") + ": LLAMA3_70B, "
                   "64 GPUs, NVFP4, GBS 256, seq 8192, TP2 PP4 VP5: 4864 tokens/s/GPU", "llama-3-70b", "hgx-b200",
                   "infiniband-ndr", 64, "fp4", 8192, 256, "tokens_per_gpu_s", 4864, node_gbps=64 * 800.0,
                   gpu="GB200", gpus_per_node=64),
    TrainingFigure("mbridge-llama31-405b-gb200-nvfp4", FIT, MB.format("26.04.01", "DGX-GB200 (NVL72)") + ": "
                   "LLAMA3.1_405B, 256 GPUs, NVFP4, GBS 1536, seq 8192, TP4 PP16 VP8: 1184 tokens/s/GPU", "llama-3-405b",
                   "hgx-b200", "infiniband-ndr", 256, "fp4", 8192, 1536, "tokens_per_gpu_s", 1184,
                   node_gbps=64 * 800.0, gpu="GB200", gpus_per_node=64),
    TrainingFigure("nemo-mixtral-8x7b-b200-64", FIT, f"{NEMO_B200}: MIXTRAL-8x7B, 64 GPUs, FP8, GBS 256, MBS 2, seq "
                   "4096, EP8: 15,457 tokens/s/GPU", "mixtral-8x7b", "hgx-b200", "infiniband-ndr", 64, "fp8", 4096,
                   256, "tokens_per_gpu_s", 15457, balanced=True),
    TrainingFigure("nemo-mixtral-8x22b-b200-64k", GAP, f"{NEMO_B200}: MIXTRAL-8x22B, 256 GPUs, FP8, GBS 64, seq "
                   "65536, TP2 PP4 CP8 VP14 EP8: 2,232 tokens/s/GPU. Outside the tolerance: the first B200 release at "
                   "64K, where the B200 attention rate is fitted to NeMo 25.04's long runs", "mixtral-8x22b", "hgx-b200", "infiniband-ndr",
                   256, "fp8", 65536, 64, "tokens_per_gpu_s", 2232, balanced=True),
    TrainingFigure("nemo-llama3-8b-b200-32k", HOLDOUT, f"{LS8}: 32K on 8 GPUs, batch 128, TP1 DP4 CP2: 1,624 "
                   "TFLOPS/GPU", "llama-3-8b", "hgx-b200", "infiniband-ndr", 8, "fp8", 32768, 128, "tflops_per_gpu", 1624),
    TrainingFigure("nemo-llama3-8b-b200-128k", HOLDOUT, f"{LS8}: 128K on 32 GPUs, batch 32, TP2 DP4 CP4: "
                   "1,588 TFLOPS/GPU", "llama-3-8b", "hgx-b200", "infiniband-ndr", 32, "fp8", 131072, 32,
                   "tflops_per_gpu", 1588),
    TrainingFigure("nemo-llama3-70b-b200-64", GAP, "NVIDIA NeMo 25.02 performance summary, DGX-B200 "
                   "(docs.nvidia.com/nemo-framework/user-guide/25.02/performance/performance_summary.html): LLAMA3-70B, "
                   "64 GPUs, FP8, GBS 128, seq 8192, TP2 PP4 CP2 VP5: 3062 tokens/s/GPU. Outside the tolerance: the first "
                   "B200 release; the B200 rates are fitted to the 25.11 runs", "llama-3-70b", "hgx-b200",
                   "infiniband-ndr", 64, "fp8", 8192, 128, "tokens_per_gpu_s", 3062),
)

TRT17 = ("TensorRT-LLM perf-overview, v0.17 data, 'Total Output Throughput' at maximum load, FP8 "
         "(NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ 258c754)")
TRT_DSR1 = ("TensorRT-LLM, 'How to get best performance on DeepSeek-R1 in TensorRT LLM' (NVIDIA/TensorRT-LLM "
            "docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md @ 01c4ece, read 2026-11-29), "
            "max-throughput runs at TensorRT-LLM commit b626186: trtllm-bench throughput, synthetic 1,024 in / "
            "2,048 out (stdev 0), --tp 8 --ep 8 with enable_attention_dp: attention data parallel on 8 GPUs, "
            "experts expert parallel over them; 'Total Output Throughput'")
MOE_INFERENCE: tuple[InferenceFigure, ...] = (
    # Attention data parallel with expert parallelism (inference.expert_parallel_step_s): the two B200
    # runs fit ep_copy_bytes_per_hidden, the H200 run is held out.
    InferenceFigure("trt-deepseek-r1-b200-fp4-dp8ep8-fp8kv", FIT, f"{TRT_DSR1}, B200 max-throughput for "
                    "R1-0528 with FP8 KV cache: nvidia/DeepSeek-R1-0528-FP4 (NVFP4 experts, fp8 KV cache), "
                    "max_batch_size 896 per rank (7,168 on the 8 GPUs), concurrency 7,168, 114,688 requests: "
                    "43,146.2 tokens/s", "deepseek-r1", "B200", 8, "fp4", 1024, 2048, "tokens_per_s", 43146.2,
                    ep=True, max_batch=7168),
    InferenceFigure("trt-deepseek-r1-b200-fp4-dp8ep8-bf16kv", FIT, f"{TRT_DSR1}, B200 max-throughput for R1 "
                    "with FP16 KV cache: nvidia/DeepSeek-R1-FP4 with a 16-bit KV cache and attention, "
                    "max_batch_size 384 per rank (3,072), concurrency 3,072, 49,152 requests: 36,384.1 tokens/s",
                    "deepseek-r1", "B200", 8, "fp4", 1024, 2048, "tokens_per_s", 36384.1, ep=True, max_batch=3072,
                    kv_cache="bf16"),
    InferenceFigure("trt-deepseek-r1-h200-fp8-dp8ep8", HOLDOUT, f"{TRT_DSR1}, H200 max-throughput: "
                    "deepseek-ai/DeepSeek-R1 (fp8 weights, the checkpoint's 16-bit KV cache), max_batch_size 128 per "
                    "rank (1,024), concurrency 1,024, 5,120 requests: 11,489.3 tokens/s", "deepseek-r1", "H200", 8,
                    "fp8", 1024, 2048, "tokens_per_s", 11489.3, ep=True, max_batch=1024, kv_cache="bf16"),
    InferenceFigure("trt-mixtral-8x7b-h100-tp2-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H100 TP2, 1000/1000: "
                    "15,770.89", "mixtral-8x7b", "H100", 2, "fp8", 1000, 1000, "tokens_per_s", 15770.89),
    InferenceFigure("trt-mixtral-8x7b-h200-tp2-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H200 TP2, 1000/1000: "
                    "19,151.19", "mixtral-8x7b", "H200", 2, "fp8", 1000, 1000, "tokens_per_s", 19151.19),
    InferenceFigure("trt-mixtral-8x7b-h100-tp1-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H100 TP1, 1000/1000: "
                    "6,868.52", "mixtral-8x7b", "H100", 1, "fp8", 1000, 1000, "tokens_per_s", 6868.52),
    InferenceFigure("trt-mixtral-8x7b-h200-tp1-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H200 TP1, 1000/1000: "
                    "10,371.36", "mixtral-8x7b", "H200", 1, "fp8", 1000, 1000, "tokens_per_s", 10371.36),
    InferenceFigure("trt-mixtral-8x7b-h100-tp8-1000-1000", FIT, f"{TRT17}: Mixtral 8x7B, H100 TP8, 1000/1000: "
                    "40,631.71", "mixtral-8x7b", "H100", 8, "fp8", 1000, 1000, "tokens_per_s", 40631.71),
    InferenceFigure("trt-mixtral-8x22b-h200-tp8-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x22B, H200 TP8, 1000/1000: "
                    "19,712.35", "mixtral-8x22b", "H200", 8, "fp8", 1000, 1000, "tokens_per_s", 19712.35),
    InferenceFigure("trt-qwen3-235b-h100-tp8-1000-1000", HOLDOUT, f"{TRT}: Qwen3-235B-A22B, H100 TP8 FP8, 1000/1000: "
                    "14,898", "qwen3-235b-a22b", "H100", 8, "fp8", 1000, 1000, "tokens_per_s", 14898),
    InferenceFigure("trt-qwen3-235b-h200-tp8-1000-1000", HOLDOUT, f"{TRT}: Qwen3-235B-A22B, H200 TP8 FP8, 1000/1000: "
                    "23,789", "qwen3-235b-a22b", "H200", 8, "fp8", 1000, 1000, "tokens_per_s", 23789),
    InferenceFigure("trt-qwen3-235b-b200-tp8-fp4-1000-1000", HOLDOUT, f"{TRT}: Qwen3-235B-A22B, B200 TP8 FP4, "
                    "1000/1000: 42,391", "qwen3-235b-a22b", "B200", 8, "fp4", 1000, 1000, "tokens_per_s", 42391),
    InferenceFigure("trt-llama33-70b-b200-tp1-fp4-2048-2048", FIT, f"{TRT}: Llama 3.3 70B, B200 TP1 FP4, "
                    "2048/2048: 4,783", "llama-3-70b", "B200", 1, "fp4", 2048, 2048, "tokens_per_s", 4783),
    InferenceFigure("trt-llama33-70b-b200-tp1-fp4-5000-500", FIT, f"{TRT}: Llama 3.3 70B, B200 TP1 FP4, "
                    "5000/500: 1,459", "llama-3-70b", "B200", 1, "fp4", 5000, 500, "tokens_per_s", 1459),
    InferenceFigure("trt-mixtral-8x7b-h100-tp4-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H100 TP4, 1000/1000: "
                    "27,784.74", "mixtral-8x7b", "H100", 4, "fp8", 1000, 1000, "tokens_per_s", 27784.74),
    InferenceFigure("trt-mixtral-8x7b-h200-tp4-1000-1000", HOLDOUT, f"{TRT17}: Mixtral 8x7B, H200 TP4, 1000/1000: "
                    "33,580.9", "mixtral-8x7b", "H200", 4, "fp8", 1000, 1000, "tokens_per_s", 33580.9),
    InferenceFigure("trt-llama33-70b-b200-tp1-fp4-1000-1000", FIT, f"{TRT}: Llama 3.3 70B, B200 TP1 FP4, "
                    "1000/1000: 7,007", "llama-3-70b", "B200", 1, "fp4", 1000, 1000, "tokens_per_s", 7007),
    InferenceFigure("trt-llama31-405b-b200-tp4-fp4-1000-1000", HOLDOUT, f"{TRT}: Llama 3.1 405B, B200 TP4 FP4, "
                    "1000/1000: 5,209", "llama-3-405b", "B200", 4, "fp4", 1000, 1000, "tokens_per_s", 5209),
)

SGL_EP = ("SGLang Team, 'Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on 96 H100 "
          "GPUs' (LMSYS blog, 2025-05-05; lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md @ 2db4e40)")
DS_PROFILE = ("DeepSeek-AI profile-data (github.com/deepseek-ai/profile-data, 2025-02-27): decode at EP128 on H800, "
              "128 sequences a GPU, 4K prompts, two micro-batches overlapping the all-to-alls; its rate as "
              f"{SGL_EP} derives it, decode table 'DeepSeek Profile': 18,598 tokens/s a node")
H800 = (("nvlink_gb_s", 400.0),)   # H800 SXM: H100's HBM and tensor cores, NVLink cut to 400 GB/s
WIDE_EP_INFERENCE: tuple[InferenceFigure, ...] = (
    # Wide expert parallelism across nodes (inference.ScaleOut): decode pools, prefill elsewhere. No
    # factor is fitted on them: the fabric terms are the catalog's (network_efficiency, nvlink_efficiency,
    # tp_allreduce_latency_us; DeepEP's kernel table checks the all-to-all, test_estimate_wide_ep.py),
    # the overlap of two micro-batches is DeepSeek's design (ep_decode_overlap 1).
    InferenceFigure("sglang-dsv3-h100-ep72-decode", HOLDOUT, f"{SGL_EP}, decode table 'SGLang (Default)': "
                    "DeepSeek-V3 (fp8 weights, 16-bit KV cache) on 9 nodes of 8 H100 over InfiniBand (400 Gb/s a "
                    "GPU), DP72 attention, EP72 (256 + 32 redundant experts, EPLB), DeepEP low-latency kernels, "
                    "two-batch overlap, 256 sequences a GPU, KV length 2,000 (2,000-token prompts, 100 out): "
                    "22,282 tokens/s a node, / 8", "deepseek-v3", "H100", 72, "fp8", 2000, 100,
                    "decode_tokens_per_gpu_s", 22282 / 8, ep=True, max_batch=256 * 72, kv_cache="bf16",
                    node_gbps=3200, dual_batch=True),
    InferenceFigure("deepseek-profile-h800-ep128-decode", HOLDOUT, f"{DS_PROFILE}, / 8. H800 modelled as H100 with "
                    "400 GB/s NVLink; 16-bit KV cache, 400 Gb/s InfiniBand a GPU", "deepseek-v3", "H100", 128, "fp8",
                    4096, 0, "decode_tokens_per_gpu_s", 18598 / 8, ep=True, max_batch=128 * 128, kv_cache="bf16",
                    node_gbps=3200, dual_batch=True, gpu_overrides=H800),
    InferenceFigure("deepseek-day6-h800-ep144-decode", REFERENCE, "DeepSeek-AI, 'Day 6: One More Thing, DeepSeek-V3/R1 "
                    "Inference System Overview' (github.com/deepseek-ai/open-infra-index, 2025-03-01): decode on "
                    "18-node units of 8 H800, EP144 (2 routed + 1 redundant expert a GPU), 14.8k output tokens/s "
                    "a node over a day of production traffic, mean KV length 4,989 a token; the batch, 128 a GPU, "
                    f"is the reading of {SGL_EP}, and production runs MTP, which the row does not model: a reference",
                    "deepseek-v3", "H100", 144, "fp8", 4989, 0, "decode_tokens_per_gpu_s", 14800 / 8, ep=True,
                    max_batch=128 * 144, kv_cache="bf16", node_gbps=3200, dual_batch=True, gpu_overrides=H800),
    InferenceFigure("sglang-dsv3-gb200-ep48-decode", REFERENCE, "SGLang Team, 'Deploying DeepSeek on GB200 NVL72 with PD "
                    "and Large Scale EP (Part I): 2.7x Higher Decoding Throughput' (LMSYS blog, 2025-06-16; "
                    "lm-sys/lm-sys.github.io blog/2025-06-16-gb200-part-1.md): DeepSeek (fp8) decode on 12 four-GPU "
                    "trays of one NVL72 rack (EP48 over NVLink alone, no two-batch overlap), 2,000-token prompts, "
                    "100 out: 7,583 tokens/s a GPU. The batch is not published (the decode nodes run saturated); "
                    "modelled at 768 a GPU: a reference", "deepseek-v3", "GB200", 48, "fp8", 2000, 100,
                    "decode_tokens_per_gpu_s", 7583, ep=True, max_batch=768 * 48, kv_cache="bf16",
                    node_gbps=1600, gpus_per_node=4, nvlink_domain=72),
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
    InferenceFigure("mlperf-v4.1-llama2-70b-h100", HOLDOUT, f"{MLPERF_I}, NVIDIA DGX-H100_H100-SXM-80GBx8_TRT: "
                    "24,524.9 tokens/s on 8 GPUs (per TP2 replica: / 4). Output 290 tokens per sample (tokens/s "
                    f"/ samples/s); input the OpenOrca set's mean prompt, 222 tokens ({LENGTHS})",
                    "llama-2-70b", "H100", 2, "fp8", ORCA_IN, 290, "tokens_per_s", 24524.9 / 4, output_cv=ORCA_CV),
    InferenceFigure("mlperf-v4.1-llama2-70b-h200", HOLDOUT, f"{MLPERF_I}, Dell XE9680_H200_SXM_141GBx8_TRT (air "
                    "cooled, not NVIDIA's 1,000 W CTS system): 32,124.3 tokens/s on 8 GPUs (per TP1 replica: / 8); "
                    "lengths as above", "llama-2-70b", "H200", 1, "fp8", ORCA_IN, 290, "tokens_per_s", 32124.3 / 8, output_cv=ORCA_CV),
)


AZURE_MI300X = ("Azure AI benchmarking guide, ND MI300X v5 results, End-to-End Inference Workloads - vLLM "
                "(Azure_Results/ND_MI300X_v5_results.md, published 2025-02-04 at de9baec, unchanged through "
                "bf209ab of 2025-03-27; read in samuel-bohman/AI-benchmarking-guide @ 2b25b69, a fork of "
                "Azure/AI-benchmarking-guide): Llama 3.1 8B, FP8 weights and KV cache "
                "(amd/Meta-Llama-3.1-8B-Instruct-FP8-KV), TP1 on one MI300X, vLLM benchmark_throughput.py in "
                "rocm/vllm-dev:20241121-tuned, 1,000 prompts at once, max-num-seqs 3,000 "
                "(Benchmarks/AMD/LLMBenchmark.py and config.json at de9baec; the table's figure is the 7th field "
                "of vLLM's 'Throughput:' line, output tokens/s)")
MI300X_TP1 = ("One replica per GPU (TP1): the MI300X one-GPU efficiencies (*.MI300X.tp1, fitted on Azure's "
              "Llama 3.1 8B runs), not the TP8 ones, which carry the all-reduces over Infinity Fabric")
AMD_VLLM = ("AMD, 'Performance results with AMD ROCm software', AI Inference, vLLM throughput at maximum load (a "
            "local client fed at an infinite rate, all prompts at once), container "
            "rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605 (released June 18, 2025), 8x MI300X (192 GB HBM3, 750 W), "
            "TP8, FP8 weights and KV cache (amd/Llama-3.1-{}-Instruct-FP8-KV), "
            "https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html (read 2026-11-28). "
            "Output tokens/s: the table does not say, but with prompts and outputs counted its 70B rows would "
            "differ 1.9x between 128/2048 and 2048/2048 where a compute-bound server's total rate is flat; "
            "output alone, they are within 6%")
MI300X_INFERENCE: tuple[InferenceFigure, ...] = (
    # ---- one GPU (TP1): Azure's Llama 3.1 8B rows, every other row fitted (the tp1 efficiencies),
    # the rest held out ----
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-128-128", FIT, f"{AZURE_MI300X}: 128/128: 18,149",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 128, 128, "tokens_per_s", 18149, max_batch=1000),
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-128-1024", HOLDOUT, f"{AZURE_MI300X}: 128/1024: 19,579",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 128, 1024, "tokens_per_s", 19579, max_batch=1000),
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-128-2048", FIT, f"{AZURE_MI300X}: 128/2048: 16,394",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 128, 2048, "tokens_per_s", 16394, max_batch=1000),
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-500-2000", HOLDOUT, f"{AZURE_MI300X}: 500/2000: 13,559",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 500, 2000, "tokens_per_s", 13559, max_batch=1000),
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-1024-1024", FIT, f"{AZURE_MI300X}: 1024/1024: 10,995",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 1024, 1024, "tokens_per_s", 10995, max_batch=1000),
    InferenceFigure("azure-vllm-llama31-8b-mi300x-tp1-2048-2048", HOLDOUT, f"{AZURE_MI300X}: 2048/2048: 7,356",
                    "llama-3.1-8b", "MI300X", 1, "fp8", 2048, 2048, "tokens_per_s", 7356, max_batch=1000),
    # ---- fit half: the 70B runs whose lengths separate the three MI300X efficiencies (long
    # contexts: the KV reads; long prompts: prefill; the rest: the GEMMs) ----
    InferenceFigure("amd-vllm-llama31-70b-mi300x-tp8-128-4096", FIT, f"{AMD_VLLM.format('70B')}: Llama 3.1 70B, "
                    "128/4096, 1,500 prompts, max-num-seqs 1,500: 13,667.3", "llama-3.1-70b", "MI300X", 8, "fp8",
                    128, 4096, "tokens_per_s", 13667.3),
    InferenceFigure("amd-vllm-llama31-70b-mi300x-tp8-500-2000", FIT, f"{AMD_VLLM.format('70B')}: Llama 3.1 70B, "
                    "500/2000, 2,000 prompts, max-num-seqs 2,000: 13,367.1", "llama-3.1-70b", "MI300X", 8, "fp8",
                    500, 2000, "tokens_per_s", 13367.1),
    InferenceFigure("amd-vllm-llama31-70b-mi300x-tp8-2048-2048", FIT, f"{AMD_VLLM.format('70B')}: Llama 3.1 70B, "
                    "2048/2048, 1,500 prompts, max-num-seqs 1,500: 8,352.6", "llama-3.1-70b", "MI300X", 8, "fp8",
                    2048, 2048, "tokens_per_s", 8352.6),
    # ---- held out: the fourth 70B row, and every 405B row (another model: 126 layers, twice the
    # hidden size, a larger share of all-reduce) ----
    InferenceFigure("amd-vllm-llama31-70b-mi300x-tp8-128-2048", HOLDOUT, f"{AMD_VLLM.format('70B')}: Llama 3.1 "
                    "70B, 128/2048, 3,200 prompts, max-num-seqs 3,200: 16,581.5", "llama-3.1-70b", "MI300X", 8,
                    "fp8", 128, 2048, "tokens_per_s", 16581.5),
    InferenceFigure("amd-vllm-llama31-405b-mi300x-tp8-128-2048", HOLDOUT, f"{AMD_VLLM.format('405B')}: Llama "
                    "3.1 405B, 128/2048, 1,500 prompts, max-num-seqs 1,500: 4,275", "llama-3.1-405b", "MI300X", 8,
                    "fp8", 128, 2048, "tokens_per_s", 4275),
    InferenceFigure("amd-vllm-llama31-405b-mi300x-tp8-128-4096", HOLDOUT, f"{AMD_VLLM.format('405B')}: Llama "
                    "3.1 405B, 128/4096, 1,500 prompts, max-num-seqs 1,500: 3,356.7", "llama-3.1-405b", "MI300X", 8,
                    "fp8", 128, 4096, "tokens_per_s", 3356.7),
    InferenceFigure("amd-vllm-llama31-405b-mi300x-tp8-500-2000", HOLDOUT, f"{AMD_VLLM.format('405B')}: Llama "
                    "3.1 405B, 500/2000, 2,000 prompts, max-num-seqs 2,000: 3,201.4", "llama-3.1-405b", "MI300X", 8,
                    "fp8", 500, 2000, "tokens_per_s", 3201.4),
    InferenceFigure("amd-vllm-llama31-405b-mi300x-tp8-2048-2048", HOLDOUT, f"{AMD_VLLM.format('405B')}: Llama "
                    "3.1 405B, 2048/2048, 500 prompts, max-num-seqs 500: 2,179.7", "llama-3.1-405b", "MI300X", 8,
                    "fp8", 2048, 2048, "tokens_per_s", 2179.7),
    InferenceFigure("amd-vllm-llama31-70b-mi300x-tp8-128-2048-jul2025", REFERENCE, f"{AMD_VLLM.format('70B')}"
                    .replace("rocm6.4.1_vllm_0.9.0.1_20250605 (released June 18, 2025)",
                             "rocm6.4.1_vllm_0.9.1_20250715 (released July 16, 2025)") + ": Llama 3.1 70B, "
                    "128/2048, 3,200 prompts, max-num-seqs 3,200: 12,638.9. The same page's same row a month "
                    "later, 24% below the June container's 16,581.5 (13,212.5 to 13,818.7 in the September to "
                    "November 2025 containers)", "llama-3.1-70b", "MI300X", 8, "fp8", 128, 2048, "tokens_per_s",
                    12638.9),
    InferenceFigure("mlperf-v4.1-llama2-70b-mi300x", HOLDOUT, "MLPerf Inference v4.1, closed, llama2-70b-99.9 "
                    "Offline, AMD 1xMI300X_2xEPYC-9374F (mlcommons/inference_results_v4.1 closed/AMD/results/"
                    "1xMI300X_2xEPYC-9374F/llama2-70b-99.9/Offline/performance/run_1/mlperf_log_summary.txt): "
                    "3,062.72 tokens/s on one GPU (vLLM, FP8). Output 293 tokens per sample (tokens/s / samples/s "
                    f"10.4445); input the OpenOrca mean, 222 tokens ({LENGTHS}). {MI300X_TP1}",
                    "llama-2-70b", "MI300X", 1, "fp8", ORCA_IN, 293, "tokens_per_s", 3062.72, output_cv=ORCA_CV),
)


def with_factors(catalog: Catalog, **values: float) -> Catalog:
    """The catalog with some factors replaced (names with dots passed as a dict: **{'a.b': 1}).
    A catalog that notes its factors' reads (_noting) gives one that notes them in the same set."""
    noted = catalog.factors if isinstance(catalog.factors, _Noted) else None
    factors = dict(catalog.factors if noted is None else noted.plain)
    for name, value in values.items():
        old = factors[name]
        factors[name] = Factor(name, value, old.source, old.note)
    out = dataclasses.replace(catalog, factors=factors)
    return out if noted is None else _noting(out, noted.read)


# ---------------------------------------------------------------- the fit's memo
# A figure's error is a function of the figure and of the catalog, and the fit varies only the
# catalog's factors. The computation reads some of them (the estimate stage through
# Catalog.factor_values and Catalog.factor): wherever every factor one computation read has the
# value it had then, another reads the same factors in the same order and gives the same error.
# So the fit computes a figure's error once for each assignment of the factors its computation
# reads: a grid point that moves factors the figure never reads is a lookup (about 57% of the
# fit's evaluations: each figure reads 4 to 7 of the calibrated factors).

_ALL = "\0every factor"     # noted where a computation read the whole mapping: every factor is an input
_ABSENT = object()          # the value of a name the catalog has no factor of (read as a fallback test)


class _Noted(dict):
    """A catalog's factors, or their values, noting the name of each one read into `read` (a set
    shared by the catalogs derived from one: with_factors); a read of the whole mapping (iterating
    it, its size, a copy, a comparison) notes _ALL. `plain` is the mapping it copies, unnoted."""

    __slots__ = ("plain", "read")

    def __init__(self, plain, read: set):
        super().__init__(plain)
        self.plain, self.read = plain, read

    def __getitem__(self, name):
        self.read.add(name)
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        self.read.add(name)
        return dict.get(self, name, default)

    def __contains__(self, name):
        self.read.add(name)
        return dict.__contains__(self, name)

    def _whole(self) -> None:
        self.read.add(_ALL)

    def __iter__(self):
        self._whole()
        return dict.__iter__(self)

    def __len__(self):
        self._whole()
        return dict.__len__(self)

    def keys(self):
        self._whole()
        return dict.keys(self)

    def values(self):
        self._whole()
        return dict.values(self)

    def items(self):
        self._whole()
        return dict.items(self)

    def copy(self):
        self._whole()
        return dict(dict.items(self))

    def __eq__(self, other):
        self._whole()
        return dict.__eq__(self, other)

    def __ne__(self, other):
        self._whole()
        return dict.__ne__(self, other)

    __hash__ = None

    def __reduce__(self):
        self._whole()
        return dict, (dict(dict.items(self)),)


def _noting(catalog: Catalog, read: set) -> Catalog:
    """`catalog` (whose factors are a plain mapping) with factors and factor_values that note each
    name read into `read`."""
    noted = dataclasses.replace(catalog, factors=_Noted(catalog.factors, read))
    # factor_values is a cached property (not a field): set on the instance, it is what is read
    object.__setattr__(noted, "factor_values", _Noted(catalog.factor_values, read))
    return noted


def _remembered_error(f: TrainingFigure | InferenceFigure, catalog: Catalog, memo: dict) -> float:
    """error(f, catalog), from `memo` where a computation of it read factors that all have the
    values they have in `catalog` (the fit's memo, above); else computed, noting what it reads,
    and remembered. `memo` serves catalogs that differ only in their factors (one fit's)."""
    values = catalog.factor_values
    runs = memo.setdefault(f.key, {})
    for names, errors in runs.items():
        got = errors.get(tuple(values.get(n, _ABSENT) for n in names), _ABSENT)
        if got is not _ABSENT:
            return got
    read: set = set()
    err = error(f, _noting(catalog, read))
    names = tuple(sorted(values)) if _ALL in read else tuple(sorted(read))
    runs.setdefault(names, {})[tuple(values.get(n, _ABSENT) for n in names)] = err
    return err


def _hardware(f: TrainingFigure, catalog: Catalog) -> Hardware:
    n = catalog.onprem_nodes[f.node]
    gpn = f.gpus_per_node or n.gpus
    return Hardware("dc", "on_prem", "on_prem", n.name, catalog.gpus[f.gpu or n.gpu], gpn, n.vcpus, f.fabric,
                    f.node_gbps, 1.0, None)


def training_value(f: TrainingFigure, catalog: Catalog) -> float:
    """The model's figure in the published metric."""
    hw = _hardware(f, catalog)
    model = dataclasses.replace(catalog.models[f.model], **dict(f.model_overrides))
    cat = with_factors(catalog, global_batch_tokens=f.batch_seqs * f.seq_len,
                       **({"moe_imbalance": 1.0} if f.balanced else {}))
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
    if f.metric == "tflops_causal":
        # Megatron-Core since March 2025 counts half the attention products (the causal mask):
        # 6 N_active + 6 L h s per token, where the model's MFU counts 12 L h s.
        per_token = 6 * model.active_b * 1e9 + 6 * model.layers * model.attention_width * f.seq_len
        return step.tokens / step.seconds / f.gpus * per_token / 1e12
    return step.tokens / step.seconds / f.gpus


def inference_value(f: InferenceFigure, catalog: Catalog) -> float:
    m, g = catalog.models[f.model], dataclasses.replace(catalog.gpus[f.gpu], **dict(f.gpu_overrides))
    fabric = (inference.ScaleOut.of(f.node_gbps, f.gpus_per_node, f.fabric, f.nvlink_domain, catalog, f.dual_batch)
              if f.node_gbps > 0 or f.nvlink_domain else None)
    if f.metric == "decode_tokens_per_gpu_s":
        # A decode pool's own rate (prefill on other nodes, as the run disaggregates): the published
        # batch per GPU (max_batch / tp), every sequence at the run's KV length, one step D(B):
        # B / D(B) / GPUs. The batch must fit the GPUs' memory as the model sizes it.
        serving = inference.Serving(output_cv=f.output_cv, kv_cache=f.kv_cache)
        rep = inference.replica(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, catalog, serving, ep=f.ep,
                                fabric=fabric)
        assert rep.max_batch >= f.max_batch, f"{f.key}: {f.max_batch} sequences do not fit ({rep.max_batch})"
        context = inference.context_tokens(f.input_tokens, f.output_tokens, catalog, serving)
        step = inference.decode_step_s(m, g, f.tp, f.quant, f.max_batch, context, catalog,
                                       kv=inference.kv_quantization(f.quant, serving), ep=f.ep, fabric=fabric)
        return f.max_batch / step / f.tp
    if f.metric == "ttft_ms":
        # At concurrency 1 there is no queue and no batch: one prefill plus one decode step.
        rep = inference.replica(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, catalog)
        pt = inference.serving_point(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, 1, rep, catalog)
        return pt.prefill_ms + pt.decode_ms
    tpot = f.tpot_ms * catalog.factor("tpot_p99_multiplier") if f.tpot_ms < 1e9 and not f.slo_p99 else f.tpot_ms
    serving = inference.Serving(output_cv=f.output_cv, kv_cache=f.kv_cache)
    pt, why = inference.best_batch(m, g, f.tp, f.quant, f.input_tokens, f.output_tokens, f.ttft_ms, tpot, catalog,
                                   serving, ep=f.ep, max_batch=f.max_batch, fabric=fabric)
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
    ({"base_mfu.H100.bf16": _grid(0.40, 0.54, 0.01), "fp8_mfu.H100": _grid(0.36, 0.52, 0.01),
      "tp_overlap": _grid(0.3, 0.9, 0.1)}, {"fp8_mfu.H200": "fp8_mfu.H100",
                                                    "base_mfu.H200.bf16": "base_mfu.H100.bf16"},
     ("llama3-405b-8k", "nemo-gpt3-175b-512", "nemo-llama3-70b-64", "nemo-llama2-7b-8", "mbridge-llama31-405b-1024")),
    ({"base_mfu.A100-80GB.bf16": _grid(0.40, 0.60, 0.01)}, {}, ("llama2-70b-a100", "llama2-7b-a100")),
    ({"decode_compute_efficiency": _grid(0.3, 0.6, 0.05), "decode_bandwidth_efficiency": _grid(0.7, 0.9, 0.1),
      "prefill_efficiency": _grid(0.35, 0.55, 0.05), "tp_allreduce_latency_us": _grid(8, 40, 8),
      "decode_per_sequence_us": _grid(0, 10, 2)}, {},
     ("trt-llama33-70b-h100-tp2-1000-1000", "trt-llama33-70b-h200-tp1-2048-2048", "trt-llama31-8b-h200-2048-2048",
      "trt-llama31-405b-h100-tp8-1000-1000", "nim-llama33-70b-ttft-c1", "trt-mixtral-8x7b-h100-tp8-1000-1000")),
    # Attention kernels: long sequences, where attention is most of the work, and a small dense
    # model at 4K, where it is a sixth: one rate for the kernels both runs use, not the long runs'
    # alone (a rate fitted only where attention dominates reads short dense runs optimistic).
    ({"attention_mfu.H100": _grid(0.18, 0.60, 0.01)}, {"attention_mfu.H200": "attention_mfu.H100"},
     ("mz-qwen3-235b-16k", "mz-qwen3-235b-64k", "nemo-llama2-7b-8")),
    # Blackwell: bf16 GEMMs reach the share of their peak fp8 ones do (on H100 the fit puts the two
    # within 0.01), and GB200 has B200's SM.
    ({"fp8_mfu.B200": _grid(0.30, 0.60, 0.01), "attention_mfu.B200": _grid(0.18, 0.40, 0.02)},
     {"base_mfu.B200.bf16": "fp8_mfu.B200", "attention_mfu.GB200": "attention_mfu.B200"},
     ("mbridge-llama3-8b-b200-8", "mbridge-llama31-405b-b200-128", "nemo-llama3-8b-b200-64k",
      "nemo-llama3-8b-b200-256k")),
    ({"fp4_mfu.GB200": _grid(0.10, 0.50, 0.005)}, {"fp4_mfu.B200": "fp4_mfu.GB200"},
     ("mbridge-llama3-70b-gb200-nvfp4", "mbridge-llama31-405b-gb200-nvfp4")),
    ({"decode_compute_efficiency.fp4": _grid(0.10, 0.40, 0.01), "prefill_efficiency.fp4": _grid(0.10, 0.50, 0.05)}, {},
     ("trt-llama33-70b-b200-tp1-fp4-1000-1000", "trt-llama33-70b-b200-tp1-fp4-2048-2048",
      "trt-llama33-70b-b200-tp1-fp4-5000-500")),
    # Mixture of experts: the routed experts' efficiency and the all-to-all's overlap on two runs of
    # two models, fp8 and bf16 (moe_imbalance is a published measurement, not fitted).
    ({"moe_layer_efficiency": _grid(0.80, 1.00, 0.05), "moe_copy_bytes_per_hidden.fp8": _grid(250, 450, 50)}, {},
     ("mbridge-deepseek-v3-h100-1024", "mbridge-qwen3-235b-h100-256", "nemo-mixtral-8x7b-b200-64")),
    ({"moe_copy_bytes_per_hidden.bf16": _grid(0, 250, 50), "ep_overlap": _grid(0.5, 0.9, 0.1)}, {},
     ("mz-qwen3-235b-h100-bf16", "mz-qwen3-235b-16k")),
    # MI300X at TP1: a one-GPU replica's own shares (no all-reduce over Infinity Fabric to carry), on
    # every other row of Azure's Llama 3.1 8B table; MLPerf's one-GPU MI300X results are held out.
    ({"decode_compute_efficiency.MI300X.tp1": _grid(0.20, 0.60, 0.02),
      "decode_bandwidth_efficiency.MI300X.tp1": _grid(0.20, 0.90, 0.05),
      "prefill_efficiency.MI300X.tp1": _grid(0.10, 0.60, 0.02)}, {},
     ("azure-vllm-llama31-8b-mi300x-tp1-128-128", "azure-vllm-llama31-8b-mi300x-tp1-128-2048",
      "azure-vllm-llama31-8b-mi300x-tp1-1024-1024")),
    # Expert-parallel decode: the HBM traffic of each routed copy beyond its GEMMs and all-to-all, on
    # TensorRT-LLM's two DeepSeek-R1 attention-DP + EP8 runs on B200 (fp8 and 16-bit KV caches).
    ({"ep_copy_bytes_per_hidden": _grid(0, 400, 10)}, {},
     ("trt-deepseek-r1-b200-fp4-dp8ep8-fp8kv", "trt-deepseek-r1-b200-fp4-dp8ep8-bf16kv")),
    # MI300X serving (vLLM on ROCm): its own shares of the GEMM peak, of HBM bandwidth and of the
    # prefill peak, on three 70B runs whose lengths separate them; the 405B runs are held out.
    ({"decode_compute_efficiency.MI300X": _grid(0.20, 0.60, 0.02),
      "decode_bandwidth_efficiency.MI300X": _grid(0.20, 0.90, 0.05),
      "prefill_efficiency.MI300X": _grid(0.10, 0.50, 0.02)}, {},
     ("amd-vllm-llama31-70b-mi300x-tp8-128-4096", "amd-vllm-llama31-70b-mi300x-tp8-500-2000",
      "amd-vllm-llama31-70b-mi300x-tp8-2048-2048")),
)

I51 = ("MLPerf Inference v5.1, closed, {}, {} {} ({}), {}: mlcommons/inference_results_v5.1 @ 965182b "
       "closed/{}/results/{}/{}/{}/performance/run_1/mlperf_log_summary.txt, "
       "https://github.com/mlcommons/inference_results_v5.1")
I50 = ("MLPerf Inference v5.0, closed, {}, {} {} ({}), {}: the v5.0 results table "
       "(https://mlcommons.org/benchmarks/inference-datacenter/, mlcommons/inference_results_v5.0; tabulated in "
       "openshift-psap/performance-dashboard mlperf-data/mlperf-5.0.csv @ 7100702)")
SERVER_SLO = "the round's Server bounds, TTFT p99 {} s and TPOT p99 {} ms (mlcommons/inference loadgen/mlperf.conf)"
DENSE_BATCH_GAP = ("Outside the tolerance: the serving model has one decode GEMM efficiency for every batch (0.4 of "
                   "the peak, fitted on trtllm-bench runs whose KV cache holds a few hundred sequences), where "
                   "MLPerf's short prompts let TensorRT-LLM run batches of 2,048 sequences at a higher share of the "
                   "peak: the same 8 H100 went from 24,525 tokens/s in v4.1 to 31,307 in v5.0 on software alone")
MLPERF_INFERENCE: tuple[InferenceFigure, ...] = (
    # MLPerf Inference v5.0 and v5.1, held out: no factor is fitted on them. Offline is the model's
    # best batch with no latency bound (memory or the compute roofline limits it); Server is held to
    # the round's p99 TTFT and TPOT bounds (slo_p99). Lengths are the dataset's mean prompt and the
    # result's own mean output. The published rate is per replica of the submission's layout (the
    # model has no pipeline parallelism: a TP x PP replica is modelled as TP over the same GPUs).
    # ---- Llama 3.1 405B: long prompts, prefill-bound ----
    InferenceFigure("mlperf-v5.1-llama31-405b-h200-offline", HOLDOUT, I51.format(
                    "llama3.1-405b Offline", "Nebius", "H200-SXM-141GBx8_TRT", "ID 5.1-0075", "FP8, TensorRT-LLM",
                    "Nebius", "H200-SXM-141GBx8_TRT", "llama3.1-405b", "Offline") + ": 552.749 tokens/s on 8 "
                    "GPUs, one TP4 x PP2 replica (closed/Nebius/configs/H200-SXM-141GBx8/Offline/llama3_1-405b.py), "
                    "modelled as TP8; output 646.4 tokens per sample; input the dataset's mean prompt, 9,429 tokens "
                    f"({LENGTHS})", "llama-3.1-405b", "H200", 8, "fp8", L405_IN, 646, "tokens_per_s", 552.749, output_cv=L405_CV),
    InferenceFigure("mlperf-v5.1-llama31-405b-b200-fp4-offline", HOLDOUT, I51.format(
                    "llama3.1-405b Offline", "NVIDIA", "B200-SXM-180GBx8_TRT", "ID 5.1-0069", "NVFP4 weights, fp8 KV "
                    "cache", "NVIDIA", "B200-SXM-180GBx8_TRT", "llama3.1-405b", "Offline") + ": 1,624.11 tokens/s "
                    "on 8 GPUs, two TP2 x PP2 replicas (closed/NVIDIA/configs/B200-SXM-180GBx8/Offline/"
                    "llama3_1-405b.py), per replica modelled as TP4: / 2; output 651.5; input as above",
                    "llama-3.1-405b", "B200", 4, "fp4", L405_IN, 652, "tokens_per_s", 1624.11 / 2, output_cv=L405_CV),
    InferenceFigure("mlperf-v5.1-llama31-405b-h100-offline", HOLDOUT, I51.format(
                    "llama3.1-405b Offline", "Cisco", "HGX-H100_H100-SXM-80GBx16_TRT", "ID 5.1-0015", "FP8",
                    "Cisco", "HGX-H100_H100-SXM-80GBx16_TRT", "llama3_1-405b", "Offline") + ": 783.131 tokens/s "
                    "on 16 GPUs in 2 nodes; the layout is not in the results tree: one TP8 replica per 8-GPU node "
                    "(406 GB of fp8 weights fit 8 x 80 GB only whole): / 2; output 643.0; input as above",
                    "llama-3.1-405b", "H100", 8, "fp8", L405_IN, 643, "tokens_per_s", 783.131 / 2, output_cv=L405_CV),
    # ---- Mixtral 8x7B (MoE) ----
    InferenceFigure("mlperf-v5.1-mixtral-8x7b-h200-offline", HOLDOUT, I51.format(
                    "mixtral-8x7b Offline", "HPE", "HPE Cray XD670 (8x H200-SXM-141GB)", "ID 5.1-0049", "FP8",
                    "HPE", "HPE_Cray_XD670_H200_SXM_141GBx8_TRT", "mixtral-8x7b", "Offline") + ": 62,108.4 tokens/s "
                    "on 8 GPUs, one TP1 replica per GPU (closed/HPE/configs/HPE_Cray_XD670_H200_SXM_141GBx8/Offline/"
                    "mixtral-8x7b.py): / 8; output 146 tokens per sample (62,108.4 / 425.547 samples/s); input the "
                    f"dataset's mean prompt, 427 tokens ({LENGTHS})",
                    "mixtral-8x7b", "H200", 1, "fp8", MIX_IN, 146, "tokens_per_s", 62108.4 / 8, output_cv=MIX_CV),
    InferenceFigure("mlperf-v5.1-mixtral-8x7b-h200-server", HOLDOUT, I51.format(
                    "mixtral-8x7b Server", "HPE", "HPE Cray XD670 (8x H200-SXM-141GB)", "ID 5.1-0049", "FP8",
                    "HPE", "HPE_Cray_XD670_H200_SXM_141GBx8_TRT", "mixtral-8x7b", "Server") + ": 60,955.11 tokens/s "
                    f"on 8 TP1 replicas (/ 8) under {SERVER_SLO.format(2, 200)}; output 147 tokens per sample "
                    "(60,955.11 / 414.81 samples/s); input as above", "mixtral-8x7b", "H200", 1, "fp8", MIX_IN, 147,
                    "tokens_per_s", 60955.11 / 8, tpot_ms=200, ttft_ms=2000, slo_p99=True, output_cv=MIX_CV),
    InferenceFigure("mlperf-v5.0-mixtral-8x7b-h100-offline", HOLDOUT, I50.format(
                    "mixtral-8x7b Offline", "Cisco", "UCS C885A M8 (8x H100-SXM-80GB)", "ID 5.0-0010", "FP8") +
                    ": 52,724.4 tokens/s on 8 GPUs; one TP1 replica per GPU, the layout of NVIDIA's v5.0 Hopper "
                    "Mixtral configuration (47 GB of fp8 weights fit one 80 GB GPU): / 8; output 146 tokens per "
                    "sample as the v5.1 runs log; input as above", "mixtral-8x7b", "H100", 1, "fp8", MIX_IN, 146,
                    "tokens_per_s", 52724.4 / 8, output_cv=MIX_CV),
    # ---- MI300X, one replica per GPU (vLLM) ----
    InferenceFigure("mlperf-v5.1-llama2-70b-mi300x-offline", HOLDOUT, I51.format(
                    "llama2-70b-99 Offline", "AMD", "Supermicro AS-8125GS-TNMR2 (8x MI300X)", "ID 5.1-0001", "FP8, "
                    "vLLM 0.9.0.2 on ROCm 6.4.1", "AMD", "8xMI300X_2xEPYC_9575F", "llama2-70b-99", "Offline") +
                    ": 27,803.9 tokens/s on 8 TP1 replicas (closed/AMD/code/llama2-70b-99/harness_llm/models/"
                    "llama2-70b/offline_mi300x.yaml): / 8; output 301.1 tokens per sample; input the OpenOrca "
                    f"mean. {MI300X_TP1}", "llama-2-70b", "MI300X", 1, "fp8", ORCA_IN, 301, "tokens_per_s",
                    27803.9 / 8, output_cv=ORCA_CV),
    InferenceFigure("mlperf-v5.1-mixtral-8x7b-mi300x-offline", HOLDOUT, I51.format(
                    "mixtral-8x7b Offline", "AMD", "Supermicro AS-8125GS-TNMR2 (8x MI300X)", "ID 5.1-0001", "FP8, "
                    "vLLM", "AMD", "8xMI300X_2xEPYC_9575F", "mixtral-8x7b", "Offline") + ": 53,017.3 tokens/s on 8 "
                    "TP1 replicas (closed/AMD/code/mixtral-8x7b/harness_llm/models/mixtral-8x7b/offline_mi300x.yaml): "
                    f"/ 8; output 143.7 tokens per sample; input the dataset's mean. {MI300X_TP1}",
                    "mixtral-8x7b", "MI300X", 1, "fp8", MIX_IN, 144, "tokens_per_s", 53017.3 / 8, output_cv=MIX_CV),
    # ---- gaps: held out and outside the tolerance, each with why ----
    InferenceFigure("mlperf-v5.0-llama2-70b-h100-offline", GAP, I50.format(
                    "llama2-70b-99 Offline", "NVIDIA", "DGX H100 (8x H100-SXM-80GB)", "ID 5.0-0057", "FP8") +
                    ": 31,306.8 tokens/s on 8 GPUs, four PP2 replicas of 2 GPUs (mlcommons/inference_results_v5.0 "
                    "closed/NVIDIA/configs/llama2-70b/Offline/__init__.py, H100_SXM_80GB_PP2x4), per replica modelled "
                    "as TP2: / 4; output 290 tokens per sample; input the OpenOrca mean, 222 tokens. "
                    f"{DENSE_BATCH_GAP}", "llama-2-70b", "H100", 2, "fp8", ORCA_IN, 290, "tokens_per_s", 31306.8 / 4, output_cv=ORCA_CV),
    InferenceFigure("mlperf-v5.1-llama2-70b-h200-offline", GAP, I51.format(
                    "llama2-70b-99 Offline", "HPE", "HPE Cray XD670 (8x H200-SXM-141GB)", "ID 5.1-0049", "FP8",
                    "HPE", "HPE_Cray_XD670_H200_SXM_141GBx8_TRT", "llama2-70b-99", "Offline") + ": 34,964.6 "
                    "tokens/s on 8 TP1 replicas: / 8; output 291.7 tokens per sample; input the OpenOrca mean. "
                    f"{DENSE_BATCH_GAP}", "llama-2-70b", "H200", 1, "fp8", ORCA_IN, 292, "tokens_per_s", 34964.6 / 8, output_cv=ORCA_CV),
    InferenceFigure("mlperf-v5.1-llama2-70b-b200-fp4-offline", GAP, I51.format(
                    "llama2-70b-99 Offline", "NVIDIA", "B200-SXM-180GBx8_TRT", "ID 5.1-0069", "NVFP4 weights, fp8 "
                    "KV cache", "NVIDIA", "B200-SXM-180GBx8_TRT", "llama2-70b-99", "Offline") + ": 101,527 tokens/s "
                    "on 8 TP1 replicas of batch 2,048 (closed/NVIDIA/configs/B200-SXM-180GBx8/Offline/llama2-70b.py): "
                    f"/ 8; output 273.4 tokens per sample; input the OpenOrca mean. {DENSE_BATCH_GAP}",
                    "llama-2-70b", "B200", 1, "fp4", ORCA_IN, 273, "tokens_per_s", 101527 / 8, output_cv=ORCA_CV),
    InferenceFigure("mlperf-v5.1-llama31-405b-b200-fp4-server", GAP, I51.format(
                    "llama3.1-405b Server", "NVIDIA", "B200-SXM-180GBx8_TRT", "ID 5.1-0069", "NVFP4 weights, fp8 "
                    "KV cache", "NVIDIA", "B200-SXM-180GBx8_TRT", "llama3.1-405b", "Server") + ": 1,240.42 tokens/s "
                    "on two TP4 replicas (closed/NVIDIA/configs/B200-SXM-180GBx8/Server/llama3_1-405b.py): / 2, "
                    f"under {SERVER_SLO.format(6, 175)}; output 654.0; input the dataset's mean. Outside the "
                    "tolerance: MLPerf's TTFT p99 is set by the longest prompts (up to 19,988 tokens, 2.1x the mean), "
                    "the model's TTFT by the mean prompt, so it keeps a batch the 6 s bound does not allow",
                    "llama-3.1-405b", "B200", 4, "fp4", L405_IN, 654, "tokens_per_s", 1240.42 / 2, tpot_ms=175,
                    ttft_ms=6000, slo_p99=True, output_cv=L405_CV),
    InferenceFigure("mlperf-v5.1-deepseek-r1-b200-fp4-offline", HOLDOUT, I51.format(
                    "deepseek-r1 Offline", "NVIDIA", "B200-SXM-180GBx8_TRT", "ID 5.1-0069", "NVFP4 weights, fp8 "
                    "KV cache", "NVIDIA", "B200-SXM-180GBx8_TRT", "deepseek-r1", "Offline") + ": 33,379 tokens/s on "
                    "8 GPUs, one replica (closed/NVIDIA/configs/B200-SXM-180GBx8/Offline/deepseek-r1.py: attention "
                    "data parallel (enable_attention_dp), 8-way expert parallel (moe_expert_parallelism 8, WIDEEP), "
                    "gpu_batch_size 512 per attention rank: 4,096 sequences on the replica); output 3,758.8 tokens "
                    f"per sample; input the dataset's mean prompt, 804 tokens, output spread {DSR1_CV} ({LENGTHS})",
                    "deepseek-r1", "B200", 8, "fp4", DSR1_IN, 3759, "tokens_per_s", 33379.0, ep=True, max_batch=4096,
                    output_cv=DSR1_CV),
)

T60 = ("MLPerf Training v6.0, closed, gpt_oss_20b (gpt-oss-20b trained from scratch on C4 with the Llama 3.1 "
       "tokenizer to log perplexity 3.34; seq 8192, GBS 16, MXFP8, TP1 PP1 EP1: every GPU holds all 32 experts, so "
       "no rank waits on a busiest one and moe_imbalance is 1), mlcommons/training_results_v6.0 @ eabf23a, "
       "{}/results/{}/gpt_oss_20b/result_{}.txt: run_start to run_stop {:.3f} min for 196,608 samples (12,288 "
       "steps), one run of the ten. The benchmark's model: vocab 128,256 for gpt-oss's 201,088, so 20.495B "
       "parameters (as the log counts) and 3.40B active")
GPT_OSS_MLPERF = (("vocab", 128256), ("params_b", 20.495), ("active_params_b", 3.40))
MLPERF_MOE_TRAINING: tuple[TrainingFigure, ...] = (
    TrainingFigure("mlperf-v6.0-gpt-oss-20b-b200-lambda", HOLDOUT, T60.format(
                   "Lambda", "b200_n1_ngc25.09_nemo", "1", (1778349404722 - 1778343659930) / 60000) +
                   ", on Lambda-1-Click-Cluster_B200_n1 (8x B200-SXM-180GB, 1,000 W)", "gpt-oss-20b", "hgx-b200",
                   "infiniband-ndr", 8, "fp8", 8192, 16, "minutes", (1778349404722 - 1778343659930) / 60000,
                   tokens=196_608 * 8192, balanced=True, model_overrides=GPT_OSS_MLPERF),
    TrainingFigure("mlperf-v6.0-gpt-oss-20b-b200-supermicro", HOLDOUT, T60.format(
                   "Supermicro", "SYS-A22GA-NBRT-8xB200_SXM", "01", (1778314309599 - 1778308508831) / 60000) +
                   ", on Supermicro SYS-A22GA-NBRT (8x B200)", "gpt-oss-20b", "hgx-b200", "infiniband-ndr", 8,
                   "fp8", 8192, 16, "minutes", (1778314309599 - 1778308508831) / 60000, tokens=196_608 * 8192,
                   balanced=True, model_overrides=GPT_OSS_MLPERF),
)

FIGURES = {f.key: f for f in (*TRAINING, *MOE_TRAINING, *MLPERF_MOE_TRAINING, *INFERENCE, *MOE_INFERENCE,
                              *WIDE_EP_INFERENCE,
                              *MI300X_INFERENCE, *MLPERF_INFERENCE)}


FIT_ROUNDS = 8   # rounds of group-by-group fitting before a fit that has not settled is an error


def fit(catalog: Catalog) -> dict[str, float]:
    """The fitted value of every calibrated factor, from the fit half alone.

    Groups share figures' sensitivities (the dense H100 runs feel attention's rate, the long MoE
    runs feel every H100 factor), so one pass group by group depends on where it starts. The fit
    repeats passes, each starting from the last one's values, until a pass gives back values seen
    before: a fixed point, or a cycle between a few assignments on the grids, of which it takes the
    one with the smallest worst error over every fit-half figure (then the smallest sum of squares,
    then the first in order). The result does not depend on the catalog's own calibrated values
    once they are one of those."""
    # Start from the catalog's own values: where they are a fixed point, one pass says so.
    current = {name: catalog.factor(name) for name in calibrated_names()}
    seen: list[dict[str, float]] = [current]
    memo: dict = {}       # every catalog below is `catalog` with other factors (_remembered_error)
    for _ in range(FIT_ROUNDS):
        current = _fit_pass(with_factors(catalog, **current), memo)
        if current in seen:
            cycle = seen[seen.index(current):]
            return min(cycle, key=lambda a: (_objective(with_factors(catalog, **a), memo), sorted(a.items())))
        seen.append(current)
    raise AssertionError(f"the fit did not settle in {FIT_ROUNDS} passes")


def _objective(catalog: Catalog, memo: dict) -> tuple[float, float]:
    logs = [math.log(1 + _remembered_error(f, catalog, memo)) for f in FIGURES.values() if f.half == FIT]
    return round(max(abs(x) for x in logs), 9), round(sum(x * x for x in logs), 9)


def _fit_pass(catalog: Catalog, memo: dict) -> dict[str, float]:
    """One pass: each group's grid searched on its fit-half figures, in order, with the groups
    before it at the values just found and the rest at the catalog's."""
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
            logs = [math.log(1 + _remembered_error(f, cat, memo)) for f in figures]
            key = (round(max(abs(x) for x in logs), 9), round(sum(x * x for x in logs), 9))
            if best_key is None or key < best_key:
                best_key, best = key, assign
        fitted.update(best)
    return fitted


def calibrated_names() -> tuple[str, ...]:
    return tuple(n for grid, tied, _ in GROUPS for n in (*grid, *tied))


def checked() -> tuple[TrainingFigure | InferenceFigure, ...]:
    return tuple(f for f in FIGURES.values() if f.half not in (REFERENCE, GAP))


def tolerance(f: TrainingFigure | InferenceFigure) -> float:
    return TRAINING_TOLERANCE if isinstance(f, TrainingFigure) else INFERENCE_TOLERANCE



def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.4g}"


def table(catalog: Catalog) -> str:
    """The markdown table docs/performance-model.md shows: every figure, its half and error."""
    rows = ["| half | figure | GPUs | published | model | error |", "|---|---|---|---|---|---|"]
    for half in (FIT, HOLDOUT, GAP, REFERENCE):
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
