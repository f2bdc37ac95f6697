"""docs/planning.md states what the code gives: its headline numbers, recomputed."""

import re
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit.workloads import LogNormal

#: Integration: the planning question's searches.
pytestmark = pytest.mark.slow

DOC = (Path(__file__).parents[1] / "docs" / "planning.md").read_text()


@pytest.fixture(scope="module")
def answer():
    traffic = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    slo = rk.SLO(ttft=1.0, itl=0.05, quantile=0.95)
    plan = rk.plan(traffic, slo, models="Llama-3.1-70B",
                   gpus=["H100-SXM-80GB", "H200-SXM-141GB"], tp=[1, 2, 4, 8],
                   replicates=20)
    best = rk.cheapest_plan(plan, by=None)
    table = rk.decision_table(best, traffic, payg=rk.pricing.payg_price("openai-gpt-4o"),
                              provisioned=rk.pricing.provisioned_example(
                                  "azure-ptu-gpt-4o-global-hourly"))
    return plan.sel(model="Llama-3.1-70B"), best, table


def _row(gpu, tp):
    pattern = rf"\| {re.escape(gpu)} \| {tp} \| (\d+) \| ([\d,]+) \| ([\d.]+) " \
              rf"\(([\d.]+)–([\d.]+)\) \| (\w+) \| (\d+) \| (\d+) \| ([\d,]+) \|"
    match = re.search(pattern, DOC)
    assert match, (gpu, tp)
    seqs, chunk, rate, low, high, binding, replicas, gpus, cost = match.groups()
    return int(seqs), int(chunk.replace(",", "")), float(rate), float(low), float(high), \
        binding, int(replicas), int(gpus), float(cost.replace(",", ""))


@pytest.mark.parametrize("gpu, tp", [
    ("H100-SXM-80GB", 2), ("H100-SXM-80GB", 4), ("H100-SXM-80GB", 8),
    ("H200-SXM-141GB", 2), ("H200-SXM-141GB", 4), ("H200-SXM-141GB", 8)])
def test_the_plan_table(answer, gpu, tp):
    plan = answer[0].sel(gpu=gpu, tp=tp)
    seqs, chunk, rate, low, high, binding, replicas, gpus, cost = _row(gpu, tp)
    # vLLM's defaults on a >= 70 GiB GPU other than an A100: 1,024 sequences
    assert int(plan["max_num_seqs"]) == seqs == 1024
    assert int(plan["max_num_batched_tokens"]) == chunk
    assert float(plan["max_rate"]) == pytest.approx(rate, abs=0.006)
    assert float(plan["max_rate_low"]) == pytest.approx(low, abs=0.006)
    assert float(plan["max_rate_high"]) == pytest.approx(high, abs=0.006)
    assert str(plan["binding"].values) == binding
    assert int(plan["replicas"]) == replicas and int(plan["gpus"]) == gpus
    assert float(plan["monthly_cost"]) == pytest.approx(cost, abs=0.6)


def test_the_decision(answer):
    _, best, table = answer
    assert "3 replicas of 8 ×\nH100-SXM-80GB (24 GPUs, $52,385/month" in DOC
    assert (str(best["gpu"].values), int(best["tp"]), int(best["gpus"])) == \
        ("H100-SXM-80GB", 8, 24)
    assert round(float(best["monthly_cost"])) == 52_385
    assert best.attrs["model_quality"].startswith("calibrated: vllm profiles per GPU")
    for option, cost, per_million, above in (
            ("self-hosted", 52_385, "0.43", "— (capacity 1.64e11)"),
            ("pay-as-you-go", 420_809, "3.48", "1.51e10"),
            ("provisioned", 1_122_740, "9.28", "5.59e9")):
        row = table.sel(option=option)
        assert round(float(row["monthly_cost"])) == cost
        assert f"{float(row['cost_per_million_tokens']):.2f}" == per_million
        tokens = row["capacity_tokens"] if option == "self-hosted" else row["break_even_tokens"]
        mantissa, exponent = f"{float(tokens):.2e}".split("e")
        assert f"{mantissa}e{int(exponent)}" in above
        assert f"| {cost:,} | {per_million} | {above} |" in DOC
    assert int(table["units"].sel(option="provisioned")) == 1538
    assert "| provisioned (1,538 PTUs, hourly) |" in DOC
    assert f"{table.attrs['monthly_tokens']:.3g}" == "1.21e+11"
    assert str(table["choice"].values) == "self-hosted"


def test_the_ideal_bound_beside_it(answer):
    """The page's bound: the cheapest configuration on the ideal roofline, and the ideal
    roofline's own cheapest fleet over the grid."""
    _, best, _ = answer
    traffic = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    slo = rk.SLO(ttft=1.0, itl=0.05, quantile=0.95)
    ideal = rk.plan(traffic, slo, models="Llama-3.1-70B", gpus=str(best["gpu"].values),
                    tp=int(best["tp"]), max_num_seqs=int(best["max_num_seqs"]),
                    max_num_batched_tokens=int(best["max_num_batched_tokens"]), replicates=20,
                    engine="ideal").squeeze(drop=True)
    assert "(8 × H100, 1,024 sequences, 1,024-token chunks):\n14.38 req/s a replica " \
           "(13.63–15.11), 2 replicas, 16 GPUs, $34,923" in DOC
    assert (f"{float(ideal['max_rate']):.2f}", f"{float(ideal['max_rate_low']):.2f}",
            f"{float(ideal['max_rate_high']):.2f}") == ("14.38", "13.63", "15.11")
    assert (int(best["max_num_seqs"]), int(best["max_num_batched_tokens"])) == (1024, 1024)
    assert (int(ideal["replicas"]), int(ideal["gpus"]), round(float(ideal["monthly_cost"]))) \
        == (2, 16, 34_923)
    grid = rk.plan(traffic, slo, models="Llama-3.1-70B", gpus=["H100-SXM-80GB", "H200-SXM-141GB"],
                   tp=[1, 2, 4, 8], replicates=20, engine="ideal")
    cheapest = rk.cheapest_plan(grid, by=None)
    assert "the ideal roofline would say 12 × H100 for $26,192" in DOC
    assert "pick 3 replicas of 4 × H100\n(12 GPUs, $26,192)" in DOC
    assert (str(cheapest["gpu"].values), int(cheapest["tp"]), int(cheapest["gpus"]),
            round(float(cheapest["monthly_cost"]))) == ("H100-SXM-80GB", 4, 12, 26_192)


def test_the_chunked_prefill_table():
    traffic = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    slo = rk.SLO(ttft=1.0, itl=0.05, quantile=0.95)
    plan = rk.plan(traffic, slo, models="Llama-3.1-70B", gpus="H100-SXM-80GB", tp=8,
                   max_num_seqs=128, max_num_batched_tokens=[512, 1024, 2048, 8192],
                   replicates=10).squeeze(drop=True)
    for tokens in (512, 1024, 2048, 8192):
        row = plan.sel(max_num_batched_tokens=tokens)
        line = (f"| {tokens} | {float(row['max_rate']):.2f} | {row['binding'].values} | "
                f"{int(row['replicas'])} | {int(row['gpus'])} | "
                f"{float(row['monthly_cost']):,.0f} |")
        assert line in DOC, line


def test_the_deployment_section(answer):
    """§4's call on the page's answer: 3 replicas of the 8 × H100 replica, checked at 20/3
    requests/s each."""
    _, best, _ = answer
    traffic = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    assert "commands = rk.planning.launch_commands(best, traffic)" in DOC
    commands = rk.planning.launch_commands(best, traffic)
    assert commands["replicas"] == 3
    assert commands["vllm_serve"].startswith(
        "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 8 --max-num-seqs 1024 "
        "--max-num-batched-tokens 1024 ")
    assert "--request-rate 6.667 " in commands["bench_serve"]


def test_an_older_vllm_is_planned_at_its_host_scheduling():
    """The page's call for a vLLM before 0.14.0: every GPU's knob set with the synchronous host
    time added to its decode steps, and the plan's label says so."""
    assert 'engine=rk.engine_profile("vllm",\nversion="0.11.0")' in DOC
    engine = rk.engine_profile("vllm", version="0.11.0")
    host = rk.profiles.host_scheduling("vllm")
    assert "1.41 ms a decode\nstep" in DOC
    assert round(host.synchronous_step_overhead * 1e3, 2) == 1.41
    for key, phases in engine.groups.items():
        assert phases["decode"]["step_overhead"] == pytest.approx(
            rk.engine_profile("vllm", key[0]).decode["step_overhead"]
            + host.synchronous_step_overhead)
    traffic = rk.Traffic(2.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    plan = rk.plan(traffic, rk.SLO(ttft=1.0, itl=0.05), models="Llama-3.1-8B",
                   gpus=["H100-SXM-80GB", "H200-SXM-141GB"], tp=1, replicates=2,
                   engine=engine)
    assert "vllm 0.11.0 (host scheduling synchronous" in plan.attrs["model_quality"]


def test_the_kv_starved_row(answer):
    """The page's TP 2 H100 bullet: 0.9 × 79.19 − 65.71 = 5.56 GiB a GPU, less vLLM's
    1.89 + 2.09 GiB outside the KV cache, in 160 KiB tokens (80 layers × 8 heads × 128 × 2 ×
    2 bytes / 2 GPUs), to a 16-token block."""
    flat = re.sub(r"\s+", " ", DOC)
    plan = answer[0].sel(gpu="H100-SXM-80GB", tp=2)
    held = 0.9 * 79.19 * 2**30 - 65.708 * 2**30 - 3.98 * 2**30
    assert int(plan["kv_budget_tokens"]) == 10_368
    assert abs(held / 163_840 - 10_368) < 40
    assert "so the cache holds 10,368 tokens" in flat
    traffic = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
    ideal = rk.plan(traffic, rk.SLO(ttft=1.0), models="Llama-3.1-70B", gpus="H100-SXM-80GB",
                    tp=2, replicates=1, requests=50, engine="ideal")
    assert int(ideal["kv_budget_tokens"].squeeze()) == 36_448
    assert "holds 36,448 tokens there" in flat
