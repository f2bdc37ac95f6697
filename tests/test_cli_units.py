"""Latency targets with units on the command line, and the bare-number slip refused (issue 30).

Reference: the unit's definition (1 ms = 1e-3 s, 1 us = 1e-6 s), exact.
"""

import json

import pytest

from rooflinekit import cli
from rooflinekit.cli._args import LONGEST_BARE_TARGET, latency


@pytest.mark.parametrize("text, seconds", [
    ("0.5", 0.5), ("500ms", 0.5), ("500 ms", 0.5), ("0.5s", 0.5), (" 2 s ", 2.0),
    ("300us", 300e-6), ("300µs", 300e-6), ("1e-3", 1e-3), ("60", 60.0), ("90s", 90.0),
    ("50", 50.0)])
def test_a_latency_reads_its_unit(text, seconds):
    assert latency(text) == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("text, match", [
    ("61", "bare number is seconds"), ("500", "500ms"), ("0", "finite number"),
    ("-1ms", "expected a time|finite number"), ("inf", "expected a time"),
    ("nan", "expected a time"),
    ("5 parsecs", "units: s, ms, us"), ("", "expected a time"), ("ms", "expected a time")])
def test_a_bad_latency_is_refused_with_the_likely_slip(text, match):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        latency(text)
    assert LONGEST_BARE_TARGET == 60.0


def test_plan_takes_targets_with_units(capsys):
    base = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "300",
            "--output-mean", "50", "--replicates", "2", "--requests", "50", "--json"]
    assert cli.main(base + ["--ttft", "500ms", "--itl", "50ms"]) == 0
    with_units = json.loads(capsys.readouterr().out)
    assert cli.main(base + ["--ttft", "0.5", "--itl", "0.05"]) == 0
    assert json.loads(capsys.readouterr().out)["configurations"] == with_units["configurations"]
    with pytest.raises(SystemExit) as exit_:               # 500 ms, typed bare
        cli.main(base + ["--itl", "500"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--itl" in err and "500ms" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [["capacity", "llama-3.1-8b", "h100"],
                                     ["layouts", "llama-3.1-8b", "h100", "--num-gpus", "2"]])
def test_a_context_above_the_trained_length_is_refused_unless_allowed(command, capsys):
    """Llama-3.1-8B was trained to 131,072 tokens (its config's max_position_embeddings):
    200,000 is a slip, refused naming the flag; --allow-long-context takes it; a model's own
    default length is never refused (Falcon-7B's 2,048 under capacity's default 8,192)."""
    from rooflinekit.cli.main import main
    assert main([*command, "--max-model-len", "200000"]) == 2
    err = capsys.readouterr().err
    assert "--max-model-len 200,000 is above Llama-3.1-8B's trained context of 131,072" in err
    assert err.count("\n") == 1
    allowed = [*command, "--max-model-len", "200000", "--allow-long-context"]
    assert main(allowed) in (0, 1)            # 1: computed, but this context does not fit
    assert "trained context" not in capsys.readouterr().err
    assert main([*command, "--max-model-len", "131072"]) in (0, 1)
    capsys.readouterr()
    assert main(["capacity", "falcon-7b", "a100"]) == 0
