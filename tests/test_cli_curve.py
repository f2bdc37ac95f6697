"""``rooflinekit curve``: one replica's load curve, the means and medians ``vllm bench serve``
prints, at request rates or client concurrencies: what :func:`rooflinekit.planning.load_curve`
gives, the ideal roofline's beside it (bad input: ``tests/test_cli_bad_input.py``)."""

import json

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.cli.main import main
from rooflinekit.workloads import Constant

BASE = ["curve", "llama-3.1-8b", "--gpu", "h100", "--prompt-mean", "500", "--output-mean",
        "50", "--replicates", "2", "--requests", "40"]


def _json(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("loads, dim", [(["--rates", "1,8"], "request_rate"),
                                        (["--concurrencies", "2,16"], "concurrency")])
def test_the_rows_are_load_curves_medians(loads, dim, capsys):
    out = _json([*BASE, *loads], capsys)
    values = [float(x) for x in loads[1].split(",")]
    kwargs = {"rates": values} if dim == "request_rate" else {"concurrencies": [int(v) for v in values]}
    ds = rk.planning.load_curve(rk.Traffic(1.0, Constant(500), Constant(50)), rk.SLO(ttft=3600.0),
                                model="Llama-3.1-8B", gpu="H100-SXM-80GB", replicates=2,
                                requests=40, engine_draws=0, **kwargs)
    middle = ds.median("replicate")
    assert out["client"] == ("closed loop" if dim == "concurrency" else "open loop")
    assert out["model_quality"].startswith("calibrated: vllm")
    for row, load in zip(out["loads"], values):
        assert row[dim] == load
        for key, name, scale in (("mean_ttft_ms", "mean_ttft", 1e3),
                                 ("median_tpot_ms", "p50_tpot", 1e3),
                                 ("mean_itl_ms", "mean_token_itl", 1e3),
                                 ("mean_e2e_ms", "mean_latency", 1e3),
                                 ("output_throughput", "throughput", 1.0)):
            assert row[key] == pytest.approx(float(middle[name].sel({dim: load})) * scale,
                                             rel=1e-12), key
        # the bound: the same runs on the ideal roofline, faster
        assert row["ideal_mean_tpot_ms"] < row["mean_tpot_ms"]
        assert row["ideal_mean_ttft_ms"] < row["mean_ttft_ms"]
    # more load, slower tokens
    assert out["loads"][1]["mean_tpot_ms"] > out["loads"][0]["mean_tpot_ms"]


def test_the_ideal_engine_prints_no_bound_beside_itself(capsys):
    out = _json([*BASE, "--rates", "2", "--engine", "ideal"], capsys)
    assert "ideal_mean_tpot_ms" not in out["loads"][0]
    assert np.isfinite(out["loads"][0]["mean_tpot_ms"])


def test_whole_tokens_with_every_request_alike(capsys):
    assert main(["curve", "llama-3.1-8b", "--gpu", "h100", "--rates", "1", "--prompt-mean",
                 "500.5", "--output-mean", "50"]) == 2
    assert "--prompt-mean must be a whole number of tokens" in capsys.readouterr().err


def test_sharegpt_lengths_are_the_recorded_samples(capsys):
    """``--lengths sharegpt``: the lengths drawn from vLLM's ShareGPT benchmark sample scaled to
    the means, as load_curve gives them; with --spread as well, or an unknown shape, refused
    naming the flag before any simulation."""
    from rooflinekit.workloads import sharegpt_lengths
    argv = [*BASE, "--rates", "2,8", "--lengths", "sharegpt"]
    out = _json(argv, capsys)
    ds = rk.planning.load_curve(rk.Traffic(1.0, *sharegpt_lengths(500, 50)), rk.SLO(ttft=3600.0),
                                model="Llama-3.1-8B", gpu="H100-SXM-80GB", replicates=2,
                                requests=40, engine_draws=0, rates=[2.0, 8.0])
    middle = ds.median("replicate")
    for row, i in zip(out["loads"], range(2)):
        assert row["mean_tpot_ms"] == pytest.approx(float(middle["mean_tpot"][i]) * 1e3,
                                                    rel=1e-9)
    constant = _json([*BASE, "--rates", "2,8"], capsys)
    assert [r["mean_tpot_ms"] for r in out["loads"]] != \
        [r["mean_tpot_ms"] for r in constant["loads"]]
    for extra, match in ((["--spread", "0.5"], "--spread is the log-normal's sigma"),
                         (["--lengths", "zipf"], "--lengths must be one of lognormal, sharegpt")):
        assert main([*argv, *extra]) == 2
        assert match in capsys.readouterr().err


def test_sharegpt_lengths_default_to_the_samples_means(capsys):
    """``--lengths sharegpt`` without the means draws the sample as it is (221 and 182 tokens);
    the log-normal lengths have no default mean: the flag is named, before any simulation."""
    from rooflinekit.workloads import sharegpt_lengths
    argv = ["curve", "llama-3.1-8b", "--gpu", "h100", "--rates", "2", "--replicates", "2",
            "--requests", "40", "--json", "--lengths", "sharegpt"]
    out = _json(argv, capsys)
    ds = rk.planning.load_curve(rk.Traffic(1.0, *sharegpt_lengths()), rk.SLO(ttft=3600.0),
                                model="Llama-3.1-8B", gpu="H100-SXM-80GB", replicates=2,
                                requests=40, engine_draws=0, rates=[2.0])
    assert out["loads"][0]["mean_tpot_ms"] == pytest.approx(
        float(ds.median("replicate")["mean_tpot"][0]) * 1e3, rel=1e-9)
    prompt, output = sharegpt_lengths()
    assert (round(np.mean(prompt.samples)), round(np.mean(output.samples))) == (221, 182)
    for flag in ("--prompt-mean", "--output-mean"):
        given = [a for a in argv[:-2] if a != "--json"] + (
            ["--output-mean", "50"] if flag == "--prompt-mean" else ["--prompt-mean", "500"])
        assert main(given) == 2
        assert f"{flag} is required" in capsys.readouterr().err


def test_an_expert_parallel_replica_is_load_curves(capsys):
    """``--ep 2`` (SGLang's flag; ``--expert-parallel-size``) runs ``load_curve(ep=2)``: the
    same means, the degree in the JSON; a degree that does not divide the experts is refused
    naming it."""
    argv = ["curve", "mixtral-8x7b", "--gpu", "h100", "--tp", "2", "--ep", "2", "--rates", "1",
            "--prompt-mean", "500", "--output-mean", "50", "--replicates", "2", "--requests", "40"]
    out = _json(argv, capsys)
    ds = rk.planning.load_curve(rk.Traffic(1.0, Constant(500), Constant(50)), rk.SLO(ttft=3600.0),
                                model="Mixtral-8x7B", gpu="H100-SXM-80GB", tp=2, ep=2,
                                rates=[1.0], replicates=2, requests=40, engine_draws=0)
    assert (out["tp"], out["ep"]) == (2, 2) and "pp" not in out
    assert out["loads"][0]["mean_tpot_ms"] == pytest.approx(
        float(ds["mean_tpot"].median("replicate").squeeze()) * 1e3, rel=1e-12)
    assert main([*argv[:7], "3", *argv[8:]]) == 2
    assert "ep must divide" in capsys.readouterr().err
