"""The performance model on AMD MI300X, against a published MI300X serving figure.

Published: AMD, "Performance results with AMD ROCm software", AI Inference, vLLM throughput at
maximum load (a local client fed at an infinite rate), container
rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605, 8x MI300X (192 GB, 750 W): Llama 3.1 70B
(amd/Llama-3.1-70B-Instruct-FP8-KV), FP8, TP 8, 128 input / 2048 output tokens, 3,200 prompts,
max-num-seqs 3,200: 16,581.5 tokens/s.
https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html (read
2026-11-28). The table does not say whether its tokens/s count the 128 input tokens; at 128/2048
that is at most 6% (2048 / 2176).

The comparison goes through the product's own function, as tests/calibration.py does for the
NVIDIA figures: inference.best_batch with the published model, GPU, tensor-parallel size,
quantization and lengths, no latency SLO (maximum load).

What MI300X uses today: gpus.yaml's MI300X peaks (5.3 TB/s HBM, 2,615 dense fp8 TFLOP/s) with the
same decode and prefill efficiencies as every GPU (decode_bandwidth_efficiency,
decode_compute_efficiency.fp8, prefill_efficiency, decode_per_sequence_us: fitted on NVIDIA
TensorRT-LLM runs), because the inference factors are keyed by precision, not by GPU. Training
uses base_mfu.MI300X.bf16 (0.35, an assumption) and the .default fp8_mfu and attention_mfu.

The model is about 33% optimistic here (22,100 tokens/s): vLLM on ROCm reaches a smaller share of
the MI300X's bandwidth than TensorRT-LLM does of Hopper's. The catalog cannot correct this in
data alone (no per-GPU key for the decode efficiencies), so the 20% check is an expected failure,
strict: it starts to pass, and must then be made a plain test, once the model has a per-GPU decode
efficiency fitted on a different MI300X figure than this one (held out).
"""

from __future__ import annotations

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import inference

CAT = load_catalog()
PUBLISHED = 16581.5          # tokens/s, one TP8 replica on 8x MI300X
TOLERANCE = 0.20             # the serving tolerance of tests/calibration.py


def _estimate() -> float:
    pt, why = inference.best_batch(CAT.models["llama-3.1-70b"], CAT.gpus["MI300X"], 8, "fp8", 128, 2048,
                                   1e9, 1e9, CAT)
    assert pt is not None, why
    return pt.tokens_per_s


def test_mi300x_serving_estimate_is_finite_and_optimistic():
    # The known gap, bounded: if the estimate moves outside this band the docstring's account of
    # it is stale.
    err = _estimate() / PUBLISHED - 1
    assert 0.0 < err < 0.5, err


@pytest.mark.xfail(strict=True, reason="MI300X serving estimate ~33% above AMD's published vLLM figure: the "
                                       "decode efficiencies are fitted on NVIDIA runs and not keyed per GPU")
def test_mi300x_serving_within_tolerance_of_amds_published_figure():
    err = _estimate() / PUBLISHED - 1
    assert abs(err) <= TOLERANCE, f"model {_estimate():.0f} tokens/s vs published {PUBLISHED}: {err:+.1%}"
