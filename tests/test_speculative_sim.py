"""Speculative decoding in the continuous-batching simulator: kernel = reference, properties."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.batching import (
    ContinuousBatcher,
    Speculative,
    _kernels,
    _schema,
    monte_carlo,
    run_replicates,
)
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import (
    Beta,
    Constant,
    Workload,
    WorkloadSpec,
    speculative_draws,
    speculative_gains,
)
from tests.test_batching_kernels import ROOFLINE, arrived_shares, assert_same, workloads

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

drafts = st.sampled_from([0.05, 0.5, 1.0, "model"])
acceptances = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1),
                        st.builds(Beta, st.floats(0.2, 5), st.floats(0.2, 5)))


def speculative(draft, k, acceptance, seed=0, model="guide-70b"):
    if draft == "model":
        # a cheap draft of the target's own vocabulary: fewer layers
        target = catalog.model(model)
        draft = dataclasses.replace(target, name="draft", n_layers=max(1, target.n_layers // 8),
                                    sliding_window=None, n_sliding_layers=None)
    return Speculative(draft=draft, draft_tokens=k, acceptance=acceptance, seed=seed)


def assert_same_with_arrived(b, wl, shares):
    assert_same(_kernel_outputs(b, wl), b.reference(wl))
    arrived = np.floor(np.asarray(shares[:wl.n_requests]) * wl.prompt_tokens).astype(np.int64)
    assert_same(_kernel_outputs(b, wl, arrived_kv_tokens=arrived),
                b.reference(wl, arrived_kv_tokens=arrived))


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.one_of(st.none(), st.integers(1, 300)),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), k=st.integers(1, 6), alpha=acceptances,
       seed=st.integers(0, 3), shares=arrived_shares)
def test_tick_speculative_matches_reference(wl, max_num_seqs, kv, admission, block_size, extra,
                                            k, alpha, seed, shares):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=mnbt,
                          interactive_cap=2 if max_num_seqs else None,
                          speculative=speculative(0.1, k, alpha, seed))
    assert_same_with_arrived(b, wl, shares)


@SETTINGS
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       k=st.integers(1, 5), alpha=acceptances, draft=drafts, shares=arrived_shares)
def test_roofline_speculative_matches_reference(wl, config, max_num_seqs, extra, kv, admission,
                                                k, alpha, draft, shares):
    c = ROOFLINE[config]
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = ContinuousBatcher(model=c["model"], gpu=c["gpu"], tp=c["tp"], max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission=admission, block_size=4,
                          max_num_batched_tokens=None if extra is None else max_num_seqs + extra,
                          speculative=speculative(draft, k, alpha, model=c["model"]))
    assert_same_with_arrived(b, wl, shares)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), window=st.integers(1, 24),
       draft_window=st.one_of(st.none(), st.integers(1, 24)), max_num_seqs=st.integers(1, 8),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       k=st.integers(1, 5), alpha=acceptances)
def test_window_crossings_speculative_match_reference(wl, window, draft_window, max_num_seqs,
                                                      kv, admission, k, alpha):
    # sequences jump past the window by several tokens a step
    target = dataclasses.replace(catalog.model("Gemma-2-9B"), sliding_window=window)
    draft = dataclasses.replace(target, name="draft", n_layers=4, sliding_window=draft_window,
                                n_sliding_layers=None if draft_window is None else 2)
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = ContinuousBatcher(model=target, gpu="L40S", max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission=admission, block_size=4,
                          speculative=Speculative(draft=draft, draft_tokens=k, acceptance=alpha))
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.one_of(st.none(), st.integers(1, 300)),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), k=st.integers(1, 6))
def test_acceptance_zero_is_plain_decoding(wl, max_num_seqs, kv, admission, block_size, extra, k):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    kw = dict(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
              block_size=block_size, max_num_batched_tokens=mnbt)
    plain = _kernel_outputs(ContinuousBatcher(**kw), wl)
    spec = _kernel_outputs(ContinuousBatcher(
        speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=0.0), **kw), wl)
    drafted = _schema.STAT_NAMES.index("draft_tokens")
    for key in ("admit", "first_token", "finish", "preemptions", "status"):
        np.testing.assert_array_equal(spec[key], plain[key], err_msg=key)
    others = np.arange(len(_schema.STAT_NAMES)) != drafted
    np.testing.assert_array_equal(spec["stats"][others], plain["stats"][others])
    # k drafts per decode step: every token after the first, less those a re-prefill yields
    decoded = (wl.output_tokens[plain["status"] == 0] - 1).sum()
    assert spec["stats"][drafted] <= k * decoded
    if plain["preemptions"].sum() == 0:
        assert spec["stats"][drafted] == k * decoded


@pytest.mark.parametrize("config", sorted(ROOFLINE))
@pytest.mark.parametrize("admission", ["reserve", "paged"])
def test_acceptance_zero_on_the_roofline_takes_the_plain_steps(config, admission):
    # all arriving at once, the schedule does not depend on the steps' durations
    c = ROOFLINE[config]
    wl = Workload(np.zeros(12), np.arange(12) * 7, 3 + np.arange(12) % 5)
    kw = dict(model=c["model"], gpu=c["gpu"], tp=c["tp"], max_num_seqs=4, kv_budget_tokens=120,
              admission=admission, block_size=4)
    spec_batcher = ContinuousBatcher(
        speculative=Speculative(draft=0.2, draft_tokens=3, acceptance=0.0), **kw)
    spec = spec_batcher.run(wl)
    # the head's KV shares the budget: plain decoding with the context budget it leaves
    plain = ContinuousBatcher(**{**kw, "kv_budget_tokens": spec_batcher._kv_budget()}).run(wl)
    for key in ("n_completed", "n_preemptions", "peak_kv_tokens", "peak_kv_used_tokens",
                "peak_running", "accepted_tokens"):
        assert float(spec[key]) == float(plain[key]), key
    assert float(spec.makespan) > float(plain.makespan)      # the drafts and the verification


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       block_size=st.integers(1, 8), k=st.integers(1, 6), alpha=acceptances)
def test_speculative_loses_nothing_and_stays_within_budget(wl, max_num_seqs, kv, admission,
                                                           block_size, k, alpha):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size,
                          speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=alpha))
    tokens = []
    ref = b.reference(wl, tokens=tokens)
    stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
    done = ref["status"] == _schema.COMPLETED
    assert np.all(done ^ (ref["status"] == _schema.REJECTED))
    assert stats["peak_kv_reserved"] <= kv and stats["peak_kv_used"] <= stats["peak_kv_reserved"]
    # every completed request got exactly its output, never more
    counts = np.bincount([i for i, _ in tokens], minlength=wl.n_requests)
    np.testing.assert_array_equal(counts, np.where(done, wl.output_tokens, 0))
    assert stats["token_gaps"] == (wl.output_tokens[done] - 1).sum()
    assert 0 <= stats["accepted_tokens"] <= stats["draft_tokens"]


def test_step_time_is_the_roofline_speculative_step():
    # one request: a prefill step, then one speculative step at context prompt + 1
    model, gpu = catalog.model("guide-70b"), catalog.gpu("lab")
    draft = dataclasses.replace(model, name="draft", n_layers=10)
    wl_one = Workload([0.0], [100], [1])
    wl_two = Workload([0.0], [100], [2])
    for d in (draft, 0.25):
        b = ContinuousBatcher(model=model, gpu=gpu, tp=8, engine=rk.IDEAL,
                              speculative=Speculative(draft=d, draft_tokens=3, acceptance=0.0))
        step = float(b.run(wl_two).makespan) - float(b.run(wl_one).makespan)
        expected = float(rk.speculative_step_time(model, gpu, 1, 101, 8, draft=d,
                                                  draft_tokens=3))
        assert step == pytest.approx(expected, rel=1e-9)


def test_mean_gain_is_the_expected_tokens_per_step():
    gain, offset = speculative_gains(np.random.default_rng(1), np.full(200, 2000), 4, 0.8)
    # positions far from the end are uncapped
    inner = np.concatenate([gain[o + 1:o + 1900] for o in offset]).astype(float)
    assert inner.mean() == pytest.approx(float(rk.speculative_tokens_per_step(0.8, 4)),
                                         rel=0.01)
    assert gain.min() >= 1 and gain.max() <= 5


@pytest.mark.parametrize("alpha, k", [(0.8, 4), (0.3, 2), (0.95, 8)])
def test_gain_frequencies_are_the_capped_geometric(alpha, k):
    # P(gain = 1 + l) = α^l (1 - α) for l < k, α^k for l = k (k Bernoulli(α) drafts, the
    # leading successes accepted); 200 × 1,999 uncapped positions, each frequency within
    # 5 standard errors of a binomial proportion
    gain, offset = speculative_gains(np.random.default_rng(7), np.full(200, 2000 + k), k, alpha)
    inner = np.concatenate([gain[o + 1:o + 2000] for o in offset])
    expected = [alpha ** l * (1 - alpha) for l in range(k)] + [alpha ** k]
    assert inner.min() >= 1 and inner.max() <= k + 1
    counts = np.bincount(inner, minlength=k + 2)[1:]
    for l, p in enumerate(expected):
        se = math.sqrt(p * (1 - p) / inner.size)
        assert abs(counts[l] / inner.size - p) < 5 * se, (l, counts[l] / inner.size, p)


def test_gains_of_certain_and_impossible_acceptance_are_exact():
    output = np.full(50, 300)
    none, offset = speculative_gains(np.random.default_rng(3), output, 6, 0.0)
    assert (none == 1).all()
    every, _ = speculative_gains(np.random.default_rng(3), output, 6, 1.0)
    inner = np.concatenate([every[o + 1:o + 300 - 6] for o in offset])
    assert (inner == 7).all()


def test_per_request_acceptance_sets_each_request_mean():
    # a Beta draws one α per request; each long request's mean uncapped gain is
    # (1 - α^(k+1)) / (1 - α) for its own α, within 5 standard errors of the mean
    from rooflinekit.workloads import Beta
    k, n = 4, 40
    alpha = np.random.default_rng(11).beta(2.0, 2.0, size=n)   # the draws the rng makes first
    gain, offset = speculative_gains(np.random.default_rng(11), np.full(n, 20000), k,
                                     Beta(2.0, 2.0))
    for i in range(n):
        a = alpha[i]
        g = gain[offset[i] + 1:offset[i] + 20000 - k].astype(float)
        p = [a ** l * (1 - a) for l in range(k)] + [a ** k]
        mean = sum((l + 1) * q for l, q in enumerate(p))
        var = sum((l + 1) ** 2 * q for l, q in enumerate(p)) - mean ** 2
        assert mean == pytest.approx((1 - a ** (k + 1)) / (1 - a), rel=1e-12)
        assert abs(g.mean() - mean) < 5 * math.sqrt(var / g.size) + 1e-12


@SETTINGS
@given(output=st.lists(st.integers(1, 70), min_size=0, max_size=30), k=st.integers(1, 9),
       acceptance=acceptances, seed=st.integers(0, 2**32))
def test_compiled_gain_table_is_the_numpy_one(output, k, acceptance, seed):
    # the simulator's table (_kernels.speculative_gain_table) from the draws equals
    # speculative_gains of the same generator state, entry for entry, and leaves the rest
    output = np.array(output, np.int64)
    gain, offset = speculative_gains(np.random.default_rng(seed), output, k, acceptance)
    draws, thresholds, starts = speculative_draws(np.random.default_rng(seed), output, k,
                                                  acceptance)
    np.testing.assert_array_equal(starts, offset)
    table = np.full(draws.shape[0] + 5, 77, np.uint8)
    _kernels.speculative_gain_table(draws, thresholds, output, table)
    np.testing.assert_array_equal(table[:draws.shape[0]], gain)
    assert (table[draws.shape[0]:] == 77).all()
    rows = Speculative(draft=0.05, draft_tokens=k, acceptance=acceptance).gains(
        output[None], [np.random.SeedSequence(seed)])
    if output.size:
        np.testing.assert_array_equal(rows[0][0], speculative_gains(
            np.random.default_rng(np.random.SeedSequence(seed)), output, k, acceptance)[0])


def _search_rows(n_rows=3, n=60):
    rng = np.random.default_rng(4)
    arrival = np.sort(rng.uniform(0, 40, (n_rows, n)), axis=1)
    prompt = rng.integers(1, 30, (n_rows, n))
    output = rng.integers(1, 40, (n_rows, n))
    spec = Speculative(draft=0.05, draft_tokens=3, acceptance=0.7, seed=2)
    return ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=300, admission="paged",
                             block_size=4, speculative=spec), arrival, prompt, output


def test_gains_drawn_once_give_the_runs_of_their_seeds():
    # run_replicates(speculative_gains=) reads tables drawn before: the results of the seeds
    # they were drawn from, for any subset of rows taken with its own tables (a search's step)
    b, arrival, prompt, output = _search_rows()
    seeds = [b.speculative.row_seed(r) for r in (2, 0, 2)]
    rows = [2, 0, 2]
    drawn = run_replicates(b, arrival[rows], prompt[rows], output[rows],
                           speculative_seeds=seeds, itl_target=2.0)
    gain, offset = b.speculative.gains(output, [b.speculative.row_seed(r) for r in range(3)])
    read = run_replicates(b, arrival[rows], prompt[rows], output[rows],
                          speculative_gains=(gain[rows], offset[rows]), itl_target=2.0)
    for name in drawn.data_vars:
        np.testing.assert_array_equal(read[name].values, drawn[name].values, err_msg=name)


def test_gains_given_are_checked_before_the_run():
    b, arrival, prompt, output = _search_rows()
    gain, offset = b.speculative.gains(output, [b.speculative.row_seed(r) for r in range(3)])
    rows = (arrival, prompt, output)
    with pytest.raises(ValueError, match="not both"):
        run_replicates(b, *rows, speculative_gains=(gain, offset),
                       speculative_seeds=[b.speculative.row_seed(r) for r in range(3)])
    with pytest.raises(ValueError, match="needs a batcher with speculative"):
        run_replicates(dataclasses.replace(b, speculative=None), *rows,
                       speculative_gains=(gain, offset))
    with pytest.raises(TypeError, match=r"\(gain, offset\) pair"):
        run_replicates(b, *rows, speculative_gains=[gain, offset])
    with pytest.raises(ValueError, match="uint8 of shape"):
        run_replicates(b, *rows, speculative_gains=(gain[:, :5], offset))
    with pytest.raises(ValueError, match="uint8 of shape"):
        run_replicates(b, *rows, speculative_gains=(gain.astype(np.int64), offset))
    with pytest.raises(ValueError, match="running sum"):
        run_replicates(b, *rows, speculative_gains=(gain, offset + 1))
    for bad in (0, 5):                               # gains in [1, k + 1] = [1, 4]
        wrong = gain.copy()
        wrong[1, 7] = bad
        with pytest.raises(ValueError, match=r"\[1, draft_tokens \+ 1\] = \[1, 4\]"):
            run_replicates(b, *rows, speculative_gains=(wrong, offset))
    # a gain of 4 at the last position of a request (1 token left) passes its output
    assert output[0, 0] >= 2                         # so that position is a decode step's
    wrong = gain.copy()
    wrong[0, offset[0, 1] - 1] = 4
    with pytest.raises(ValueError, match="past its output"):
        run_replicates(b, *rows, speculative_gains=(wrong, offset))


def test_gains_never_pass_the_output():
    output = np.array([1, 2, 3, 10])
    gain, offset = speculative_gains(np.random.default_rng(0), output, 8, 1.0)
    for i, o in enumerate(output):
        np.testing.assert_array_equal(gain[offset[i] + 1:offset[i] + o], o - np.arange(1, o))


def test_speculation_shortens_the_run_and_reports_acceptance():
    wl = WorkloadSpec(64, output=Constant(200), prompt=Constant(50)).sample(0)
    b = ContinuousBatcher(max_num_seqs=16, model="guide-70b", gpu="lab", tp=8)
    plain = b.run(wl)
    spec = dataclasses.replace(b, speculative=Speculative(draft=0.05, draft_tokens=4,
                                                          acceptance=0.8)).run(wl)
    assert float(spec.makespan) < float(plain.makespan)
    assert float(spec.acceptance_rate) == pytest.approx(
        float(spec.accepted_tokens) / float(spec.draft_tokens))
    assert 0.5 < float(spec.acceptance_rate) < 0.8
    assert np.isnan(float(plain.acceptance_rate)) and float(plain.draft_tokens) == 0


def test_monte_carlo_draws_acceptance_per_replicate():
    spec = WorkloadSpec(20, output=Constant(30), prompt=Constant(10))
    b = ContinuousBatcher(max_num_seqs=4,
                          speculative=Speculative(draft=0.1, draft_tokens=3, acceptance=0.6))
    ds = monte_carlo(spec, b, replicates=4, seed=3, parallel=False)
    again = monte_carlo(spec, b, replicates=4, seed=3, parallel=True)
    np.testing.assert_array_equal(ds.accepted_tokens.values, again.accepted_tokens.values)
    assert len(set(ds.accepted_tokens.values.ravel().tolist())) > 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(draft=0.1, acceptance=1.5), "acceptance"),
    (dict(draft=0.1, acceptance=-0.1), "acceptance"),
    (dict(draft=0.1, acceptance="high"), "acceptance"),
    (dict(draft=0.1, draft_tokens=0), "draft_tokens"),
    (dict(draft=0.1, draft_tokens=65), "draft_tokens"),
    (dict(draft=0.1, draft_tokens=2.5), "draft_tokens"),
    (dict(draft=0.0), "draft"),
    (dict(draft=1.5), "draft"),
    (dict(draft=True), "draft"),
    (dict(draft=[1]), "draft"),
    (dict(draft=0.1, seed=-1), "seed"),
])
def test_speculative_refuses_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Speculative(**kwargs)


def test_draft_must_suit_the_target():
    target = dataclasses.replace(catalog.model("guide-70b"), vocab_size=32000)
    with pytest.raises(ValueError, match="draft.*vocabulary"):
        ContinuousBatcher(model=target, gpu="lab", tp=8, speculative=Speculative(
            draft=dataclasses.replace(target, name="d", n_layers=2, vocab_size=7)))
    with pytest.raises(ValueError, match="draft.*more layers"):
        ContinuousBatcher(model=target, gpu="lab", tp=8, speculative=Speculative(
            draft=dataclasses.replace(target, name="d", n_layers=target.n_layers + 1)))
    with pytest.raises(TypeError, match="speculative"):
        ContinuousBatcher(speculative=0.5)


def test_simulate_command_decodes_speculatively(capsys):
    import json

    from rooflinekit.cli.main import main
    base = ["simulate", "--workload", "constant", "--requests", "32", "--output-mean", "64",
            "--input-len", "16", "--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "8",
            "--engine", "ideal", "--json"]     # the ideal roofline: no profile's numbers
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(base + ["--speculative-draft", "llama-3.1-8b", "--num-speculative-tokens", "4",
                        "--acceptance", "0.8"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert "acceptance_rate" in spec["continuous"] and "acceptance_rate" not in spec["static"]
    assert "acceptance_rate" not in plain["continuous"]
    assert 0 < spec["continuous"]["acceptance_rate"] < 0.8
    assert spec["continuous"]["makespan"] < plain["continuous"]["makespan"]
