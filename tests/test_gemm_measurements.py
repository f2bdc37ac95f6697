"""Weight GEMMs measured on an NVIDIA H200 and an H100 against the catalogue's roofline and the
kernel tables.

``tests/data/measurements/h200_gemm_cublas.csv`` and ``h100_gemm_cublas.csv`` (see that folder's
README) hold cuBLAS times of the weight GEMMs of a Llama-3.1-8B and -70B layer shard, measured on
one GPU of each with ``scripts/measure_gemm.py``. Two independent checks per GPU:

* the catalogue's row (datasheet dense peaks and HBM bandwidth) is an upper bound on what the
  hardware did: no GEMM ran faster than ``max(2·m·n·k / peak, bytes / bandwidth)``;
* where the profiles' development extra is installed (``aiconfigurator-core``), the bf16 times
  match the vLLM GEMM table the GPU's engine profile was fitted to (median ratio within 10 %).
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

import rooflinekit as rk

DATA = Path(__file__).parent / "data" / "measurements"

#: Each measured GPU: its file, the catalogue's name, aiconfigurator's system and the source's
#: start.
GPUS = {"H200": ("h200_gemm_cublas.csv", "H200-SXM-141GB", "h200_sxm",
                 "scripts/measure_gemm.py on one NVIDIA H200"),
        "H100": ("h100_gemm_cublas.csv", "H100-SXM-80GB", "h100_sxm",
                 "scripts/measure_gemm.py on one NVIDIA H100 80GB HBM3")}


def _rows(gpu):
    with open(DATA / GPUS[gpu][0], newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


ROWS = {gpu: _rows(gpu) for gpu in GPUS}

#: One GPU's shard of each weight GEMM, ``(n, k)`` by hand from the published configs
#: (meta-llama/Llama-3.1-8B and -70B config.json: hidden 4096 / 8192, 32 / 64 heads, 8 KV heads,
#: head dim 128, intermediate 14336 / 28672, vocabulary 128256): qkv n = (H + 2·KV)·128 / tp,
#: k = hidden; o n = hidden, k = H·128 / tp; gate_up n = 2·I / tp, k = hidden; down n = hidden,
#: k = I / tp; LM head n = 128256 / tp, k = hidden.
SHAPES = {
    ("Llama-3.1-8B", 1): {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096),
                          "down": (4096, 14336), "lm_head": (128256, 4096)},
    ("Llama-3.1-8B", 2): {"qkv": (3072, 4096), "o": (4096, 2048), "gate_up": (14336, 4096),
                          "down": (4096, 7168)},
    ("Llama-3.1-70B", 1): {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192),
                           "down": (8192, 28672), "lm_head": (128256, 8192)},
    ("Llama-3.1-70B", 2): {"qkv": (5120, 8192), "o": (8192, 4096), "gate_up": (28672, 8192),
                           "down": (8192, 14336)},
    ("Llama-3.1-70B", 4): {"qkv": (2560, 8192), "o": (8192, 2048), "gate_up": (14336, 8192),
                           "down": (8192, 7168)},
    ("Llama-3.1-70B", 8): {"qkv": (1280, 8192), "o": (8192, 1024), "gate_up": (7168, 8192),
                           "down": (8192, 3584)},
}


@pytest.mark.parametrize("gpu", GPUS)
def test_rows_are_the_layer_gemms_with_a_source(gpu):
    assert len(ROWS[gpu]) == 640
    for row in ROWS[gpu]:
        assert row["source"].startswith(GPUS[gpu][3])
        assert (int(row["n"]), int(row["k"])) == SHAPES[row["model"], int(row["tp"])][row["gemm"]]
        assert row["dtype"] in ("bf16", "fp8")
        assert 0 < float(row["time_s"]) < 0.1


#: Each GPU's HBM bandwidth from its datasheet [bytes/s] and the largest share of its bound a
#: measured GEMM reached (as measured: the H200's a 70B TP4 gate_up at 8 rows, the H100's a 70B
#: TP2 gate_up at 2 rows, both streaming their weights).
BOUNDS = {"H200": (4.8e12, 0.872), "H100": (3.35e12, 0.907)}


@pytest.mark.parametrize("gpu", GPUS)
def test_no_gemm_beats_the_catalogues_roofline(gpu):
    """The datasheets' dense peaks (989.4 TFLOP/s bf16, 1,978.9 FP8 on both) and HBM bandwidths
    bound every measured GEMM: the fastest reaches 87 % (H200) and 91 % (H100) of its bound."""
    bandwidth, fastest = BOUNDS[gpu]
    spec = rk.catalog.gpu(GPUS[gpu][1])
    peaks = {"bf16": spec.flops_for("bf16"), "fp8": spec.flops_for("fp8")}
    assert peaks == {"bf16": pytest.approx(989.4e12), "fp8": pytest.approx(1978.9e12)}
    assert spec.hbm_bandwidth == pytest.approx(bandwidth)
    shares = []
    for row in ROWS[gpu]:
        m, n, k = (int(row[c]) for c in ("m", "n", "k"))
        width = 2 if row["dtype"] == "bf16" else 1
        moved = (n * k + m * k) * width + m * n * 2        # weights, activations in, bf16 out
        bound = max(2 * m * n * k / peaks[row["dtype"]], moved / bandwidth)
        shares.append(bound / float(row["time_s"]))
    assert max(shares) < 1.0
    assert max(shares) == pytest.approx(fastest, abs=0.01)


@pytest.mark.parametrize("gpu", GPUS)
def test_bf16_times_match_the_kernel_tables_the_profiles_use(gpu):
    """cuBLAS bf16 on each GPU against aiconfigurator-core 0.12.0's vLLM 0.24.0 GEMM table of
    that GPU (the fastest kernel per point, as scripts/engine_profiles.py reads it): median
    ratio 1.04 on the H200 (measured 2026-12-04) and 1.03 on the H100 (2026-12-06) over the
    225 shared points; FP8 per-tensor cuBLASLt runs 0.79× and 0.77× the tables', whose FP8
    GEMMs the profiles fit apart (low_precision_* knobs)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    aic = pytest.importorskip("aiconfigurator_core")
    table = Path(aic.__file__).parent / "systems" / "data" / GPUS[gpu][2] / "gemm" / "vllm" / \
        "0.24.0" / "gemm_perf.parquet"
    frame = pd.read_parquet(table)
    fastest = frame.groupby(["gemm_dtype", "m", "n", "k"]).latency.min()
    ratios = {"bf16": [], "fp8": []}
    for row in ROWS[gpu]:
        key = ({"bf16": "bfloat16", "fp8": "fp8"}[row["dtype"]], int(row["m"]), int(row["n"]),
               int(row["k"]))
        if key in fastest.index:
            ratios[row["dtype"]].append(float(row["time_s"]) * 1e3 / fastest[key])
    assert len(ratios["bf16"]) == 225
    assert statistics.median(ratios["bf16"]) == pytest.approx(1.0, abs=0.10)
    assert statistics.median(ratios["fp8"]) < 0.9
