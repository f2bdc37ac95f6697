"""A calibration whose held-out error in a phase is worse than the ideal roofline's is written
only with a warning, in its label and on stderr (issue 30); its label carries both phases'
held-out errors."""

import json

import pytest

import rooflinekit as rk
import rooflinekit.roofline as rl
from rooflinekit.calibrate import measurements_from_records, write_measurements
from rooflinekit.profiles import Calibration


def test_the_label_says_both_errors_and_worse_than_ideal():
    cal = Calibration(source="bench", held_out_error=4.1, held_out_error_ttft=67.7,
                      worse_than_ideal=("prefill",))
    assert cal.label == ("calibrated: bench, held-out TPOT error 4.1%, TTFT error 67.7% "
                         "(WORSE THAN IDEAL in TTFT: the ideal roofline predicts those rows "
                         "better)")
    again = Calibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert again.label == cal.label and again.worse_than_ideal == ("prefill",)
    with pytest.raises(ValueError, match="worse_than_ideal"):
        Calibration(worse_than_ideal=("ttft",))


def test_a_fit_worse_than_ideal_is_written_with_a_warning(tmp_path, capsys):
    """Runs the ideal roofline predicts exactly: any fit holds out no better than ideal (0 %),
    and a fitted overhead makes it worse."""
    from rooflinekit.cli.main import main
    model, gpu = rk.catalog.model("Llama-3.1-8B"), rk.catalog.gpu("H100-SXM-80GB")
    rows = []
    for i, batch in enumerate((1, 2, 4, 8, 16, 32, 64, 128)):
        ttft = rl.prefill_time(model, gpu, 512 * (i % 3 + 1), engine=rk.IDEAL)
        tpot = rl.decode_step_time(model, gpu, batch, 1024, engine=rk.IDEAL)
        # a little noise, so that a fit can only chase it
        wobble = 1.0 + 0.03 * ((-1) ** i)
        rows.append({"model": "Llama-3.1-8B", "gpu": "H100-SXM-80GB", "tp": 1,
                     "batch_size": batch, "prompt_tokens": 512 * (i % 3 + 1),
                     "output_tokens": 128, "context_length": 1024,
                     "ttft_ms": 1e3 * ttft * wobble, "tpot_ms": 1e3 * tpot * wobble,
                     "source": "synthetic: the ideal roofline with 3 % alternating noise"})
    path = write_measurements(measurements_from_records(rows), tmp_path / "ideal.csv")
    out = tmp_path / "cal.json"
    code = main(["calibrate", str(path), "--cv", "kfold", "--folds", "4", "--resamples", "2",
                 "--output", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    saved = Calibration.from_dict(json.loads(out.read_text()))
    assert saved.worse_than_ideal, saved.label
    assert "WORSE THAN IDEAL" in saved.label and "WORSE THAN IDEAL" in captured.out
    assert "holds out worse than the ideal roofline" in captured.err
