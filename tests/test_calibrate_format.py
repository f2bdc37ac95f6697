"""The measurement format's KV format, TTFT kind and engine columns; errors that name the file."""

import numpy as np
import pytest

from rooflinekit import catalog, roofline
from rooflinekit.calibrate import (TTFT_KINDS, cross_validate, measurements_from_records,
                                   measurements_to_records, predict, read_measurements,
                                   write_measurements)

ROW = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "batch_size": 10, "prompt_tokens": 137,
       "output_tokens": 187, "ttft_ms": 62.2, "tpot_ms": 7.56, "source": "test"}


def test_new_columns_round_trip(tmp_path):
    ds = measurements_from_records([{**ROW, "kv_dtype": "fp8", "ttft_kind": "static_batch",
                                     "engine": "vllm 0.6.0"}, ROW])
    assert list(ds["ttft_kind"].values) == ["static_batch", "isolated"]
    assert list(ds["engine"].values) == ["vllm 0.6.0", ""]
    back = read_measurements(write_measurements(ds, tmp_path / "m.csv"))
    assert measurements_to_records(back) == measurements_to_records(ds)
    assert TTFT_KINDS == ("isolated", "static_batch")


def test_static_batch_ttft_is_one_prefill_of_every_prompt():
    ds = measurements_from_records([{**ROW, "ttft_kind": "static_batch"}, ROW])
    pred = predict(ds)["prefill"].values
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("h100")
    # one step of 10 x 137 tokens, each prompt attending to its own 137 only: one prompt of
    # 1,370 tokens less the attention across prompts. Hand count for Llama-3.1-8B (32 layers,
    # 32 query heads of 128): QK^T and PV, 2 FLOPs a multiply-add, 4 x 32 x 32 x 128 FLOPs a
    # causal pair; n(n - 1)/2 pairs in a prompt of n; the H100's dense bf16 989.4 TFLOP/s
    # (both steps compute-bound: 1,370 tokens read 16 GB of weights in 4.8 ms, 19 ms of GEMMs)
    across = 4 * 32 * 32 * 128 * (1370 * 1369 / 2 - 10 * 137 * 136 / 2) / 989.4e12
    one_prompt = float(roofline.prefill_time(model, gpu, 1370))
    assert pred[0] == pytest.approx(one_prompt - across, rel=1e-12)
    assert pred[1] == pytest.approx(float(roofline.prefill_time(model, gpu, 137)), rel=1e-12)


def test_kv_dtype_changes_the_decode_prediction():
    ds = measurements_from_records([{**ROW, "prompt_tokens": 8000, "kv_dtype": "fp8"},
                                    {**ROW, "prompt_tokens": 8000}])
    decode = predict(ds)["decode"].values
    assert decode[0] < decode[1]          # half the KV bytes read per step


def test_cross_validate_by_engine_and_tp():
    rows = [{**ROW, "batch_size": b, "engine": e, "tp": tp}
            for b in (1, 8) for e in ("vllm", "sglang") for tp in (1, 2)]
    for by in ("engine", "tp"):
        cv = cross_validate(rows, by=by, fit=("bandwidth_efficiency",))
        assert cv.folds.sizes["fold"] == 2


@pytest.mark.parametrize("row, match", [
    ({**ROW, "ttft_kind": "batched"}, "ttft_kind must be one of"),
    ({**ROW, "kv_dtype": "fp7"}, "kv_dtype"),
    ({**ROW, "tpot_ms": "inf"}, "tpot_ms must be finite"),
])
def test_bad_rows_name_the_file_row_and_column(tmp_path, row, match):
    path = tmp_path / "runs.csv"
    write = {**ROW, **row}
    path.write_text(",".join(write) + "\n" + ",".join(str(v) for v in write.values()) + "\n")
    with pytest.raises(ValueError, match=rf"runs.csv: measurement 0: .*{match}|"
                                         rf"runs.csv: measurement 0: {match}"):
        read_measurements(path)


def test_unknown_model_and_too_few_rows_name_the_file(tmp_path):
    from rooflinekit.calibrate import calibrate
    path = tmp_path / "runs.csv"
    bad = {**ROW, "model": "no-such-model"}
    path.write_text(",".join(bad) + "\n" + ",".join(str(v) for v in bad.values()) + "\n")
    with pytest.raises(ValueError, match="runs.csv: measurement 0: field 'model'"):
        calibrate(path, n_resamples=0)
    path.write_text(",".join(ROW) + "\n" + ",".join(str(v) for v in ROW.values()) + "\n")
    with pytest.raises(ValueError, match="runs.csv: prefill: 1 measurement.*3 free knob"):
        calibrate(path, n_resamples=0)
    assert np.isfinite(calibrate(path, n_resamples=0, fit=("step_overhead",))
                       .errors["mape_calibrated"].values).all()
