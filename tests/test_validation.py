"""The shared input checks: their contract and their one message style."""

import math
import re

import numpy as np
import pytest
import xarray as xr

from rooflinekit import _validation as v
from rooflinekit.hardware import GPU

NUMPY_REPR = re.compile(r"np\.|numpy\.(float|int)|array\(")

# (value, exception) a numeric check must raise for, whatever its range
NOT_NUMBERS = [
    (True, TypeError), (np.bool_(False), TypeError), ("3", TypeError), (None, TypeError),
    (float("nan"), ValueError), (np.float64("nan"), ValueError),
    (float("inf"), ValueError), (-math.inf, ValueError),
]

ARRAY_CHECKS = {
    "check_positive": lambda name, x: v.check_positive(name, x),
    "check_nonnegative": lambda name, x: v.check_nonnegative(name, x),
    "check_fraction": lambda name, x: v.check_fraction(name, x),
    "check_integer": lambda name, x: v.check_integer(name, x, lo=1),
    "check_range": lambda name, x: v.check_range(name, x, lo=1, hi=10),
}
SCALAR_CHECKS = {
    "positive_number": lambda name, x: v.positive_number(name, x),
    "real_number": lambda name, x: v.real_number(name, x, lo=1),
    "whole_number": lambda name, x: v.whole_number(name, x, lo=1),
}
ALL = {**ARRAY_CHECKS, **SCALAR_CHECKS}


def _assert_style(exc, name):
    text = str(exc.value)
    assert text.startswith(name), text
    assert "; got " in text, text
    assert not NUMPY_REPR.search(text), text


@pytest.mark.parametrize("check", ALL)
@pytest.mark.parametrize("value, error", NOT_NUMBERS)
def test_not_a_number(check, value, error):
    with pytest.raises(error) as exc:
        ALL[check]("tp", value)
    _assert_style(exc, "tp")


@pytest.mark.parametrize("check", ALL)
@pytest.mark.parametrize("value", [-1, np.int64(-1), np.float64(-1.0)])
def test_out_of_range(check, value):
    with pytest.raises(ValueError) as exc:
        ALL[check]("tp", value)
    _assert_style(exc, "tp")
    assert re.search(r"got -1(\.0)?$", str(exc.value)), str(exc.value)


@pytest.mark.parametrize("check", [c for c in ALL if c not in ("check_nonnegative",
                                                               "check_fraction")])
@pytest.mark.parametrize("value", [0, np.float64(0.0)])
def test_zero_where_it_is_out_of_range(check, value):
    with pytest.raises(ValueError) as exc:
        ALL[check]("tp", value)
    _assert_style(exc, "tp")
    assert re.search(r"got 0(\.0)?$", str(exc.value)), str(exc.value)


@pytest.mark.parametrize("check", SCALAR_CHECKS)
@pytest.mark.parametrize("value", [[], [1, 2], np.ones((2, 2)), {}])
def test_scalar_checks_refuse_containers(check, value):
    with pytest.raises(TypeError) as exc:
        SCALAR_CHECKS[check]("n_gpus", value)
    _assert_style(exc, "n_gpus")


@pytest.mark.parametrize("check", ARRAY_CHECKS)
def test_array_checks_report_the_first_bad_element(check):
    bad = np.array([[1.0, 1.0], [1.0, -1.5]])
    with pytest.raises(ValueError) as exc:
        ARRAY_CHECKS[check]("batch_size", bad)
    _assert_style(exc, "batch_size")
    assert str(exc.value).endswith("got -1.5"), str(exc.value)
    with pytest.raises(ValueError) as exc:
        ARRAY_CHECKS[check]("batch_size", xr.DataArray(bad, dims=("a", "b")))
    _assert_style(exc, "batch_size")


@pytest.mark.parametrize("check", ARRAY_CHECKS)
def test_array_checks_pass_good_values_through(check):
    good = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert ARRAY_CHECKS[check]("x", good) is good
    assert ARRAY_CHECKS[check]("x", 1) == 1


def test_messages_quote_values_as_written():
    with pytest.raises(ValueError, match=r"^output_fraction must lie in \[0, 1\]; got 1\.5$"):
        v.check_fraction("output_fraction", np.array([0.2, np.float64(1.5)]))
    with pytest.raises(TypeError, match=r"^monthly_tokens must be a number, a numpy array or an "
                                        r"xarray\.DataArray; got str '3'$"):
        v.check_positive("monthly_tokens", "3")
    with pytest.raises(ValueError, match=r"^tp must be a whole number; got 2\.5$"):
        v.check_integer("tp", np.float64(2.5))
    with pytest.raises(ValueError, match=r"^x must lie in \(0, inf\); got -1$"):
        v.check_positive("x", np.int64(-1))


@pytest.mark.parametrize("value", [math.inf, -math.inf, np.array([1.0, np.inf])])
def test_check_integer_refuses_inf(value):
    with pytest.raises(ValueError, match=r"^tp must be a whole number; got -?inf$"):
        v.check_integer("tp", value)


def test_whole_number_accepts_whole_floats_and_returns_int():
    assert v.whole_number("n", 4.0) == 4 and isinstance(v.whole_number("n", np.int64(4)), int)
    assert v.whole_number("n", None, allow_none=True) is None


def test_show_has_no_numpy_reprs():
    assert v.show(np.float64(1.5)) == "1.5"
    assert v.show(np.int64(3)) == "3"
    assert v.show(np.array([1, 2])) == "[1, 2]"
    assert v.show(np.zeros((3, 4))) == "array of shape (3, 4)"
    assert v.show("x" * 200).endswith("...") and len(v.show("x" * 200)) == 80
    assert v.describe(None) == "None" and v.describe(True) == "bool True"


@pytest.mark.parametrize("value", [1, "yes", None, np.array([True])])
def test_check_bool(value):
    with pytest.raises(TypeError, match=r"^flag must be True or False; got "):
        v.check_bool("flag", value)
    assert v.check_bool("flag", np.True_) is True


def test_check_type_and_string():
    with pytest.raises(TypeError, match=r"^gpu must be a GPU; got str 'H100'$"):
        v.check_type("gpu", "H100", GPU)
    with pytest.raises(TypeError, match=r"^gpu must be a GPU or None; got int 3$"):
        v.check_type("gpu", 3, GPU, allow_none=True)
    with pytest.raises(TypeError, match=r"^name must be a non-empty string; got str ' '$"):
        v.check_string("name", " ")
    assert v.check_string("source", "", allow_empty=True) == ""


def test_check_one_of_suggests_a_close_match():
    with pytest.raises(ValueError, match=r"^policy must be one of 'fcfs', 'sjf'; got 'sfj' "
                                         r"\(did you mean 'sjf'\?\)$"):
        v.check_one_of("policy", "sfj", ("fcfs", "sjf"))
    assert v.check_one_of("c", "PUBLIC", ("public", "internal"), fold_case=True) == "public"
    with pytest.raises(ValueError, match=r"^c must be one of 1, 2; got 3$"):
        v.check_one_of("c", np.int64(3), (1, 2))


def test_check_keys_and_mapping():
    with pytest.raises(ValueError, match=r"^decode: unknown knob 'step_overhed' \(did you mean "
                                         r"'step_overhead'\?\); allowed: 'step_overhead'$"):
        v.check_keys("decode", {"step_overhed": 1}, ("step_overhead",), what="knob")
    with pytest.raises(TypeError, match=r"^models\['x'\] must be a GPU; got str 'a'$"):
        v.check_mapping("models", {"x": "a"}, GPU)
    with pytest.raises(TypeError, match=r"^models must be a mapping; got list \[\]$"):
        v.check_mapping("models", [])
    assert v.check_mapping("models", None, allow_none=True) == {}


@pytest.mark.parametrize("value, error", [
    (np.ones((2, 2)), ValueError), ([], ValueError), ("abc", TypeError), ([[1], [2, 3]], TypeError),
])
def test_as_1d(value, error):
    with pytest.raises(error) as exc:
        v.as_1d("tp", value)
    _assert_style(exc, "tp")
    assert v.as_1d("tp", 3).tolist() == [3]
    with pytest.raises(ValueError, match="tp must be a 1-D sequence"):
        v.as_1d("tp", 3, allow_scalar=False)


@pytest.mark.parametrize("build, match", [
    (lambda: GPU("g", 1e9, 1e12, 1e14, n_gpus=True), "n_gpus"),
    (lambda: GPU("g", 1e9, 1e12, 1e14, n_gpus=math.inf), "n_gpus"),
    (lambda: GPU("g", 1e9, 1e12, 1e14, interconnect_latency=math.nan), "interconnect_latency"),
    (lambda: GPU("g", 1e9, 1e12, 1e14, peak_flops_by_dtype=[1]), "peak_flops_by_dtype"),
    (lambda: GPU("g", np.float64(-1e9), 1e12, 1e14), "memory_bytes"),
])
def test_specs_use_the_shared_style(build, match):
    with pytest.raises((TypeError, ValueError)) as exc:
        build()
    _assert_style(exc, match)


# -- counts too large to hold exactly, and arguments that are not specs at all ------------------

def test_max_count_is_the_largest_exact_float64_integer():
    # independent of the package: 2**53 + 1 is the first integer a float64 cannot hold
    assert float(v.MAX_COUNT) == v.MAX_COUNT and float(v.MAX_COUNT + 1) == v.MAX_COUNT


@pytest.mark.parametrize("check", [
    lambda value: v.check_integer("tp", value, lo=1),
    lambda value: v.whole_number("tp", value, lo=1),
    lambda value: v.check_count_array("tp", [1, value]),
])
@pytest.mark.parametrize("value", [2**53 + 2, 1e19, 1e300])
def test_counts_above_2_53_are_refused(check, value):
    # 1e19 output tokens used to wrap to -2**63 in an int64 cast; 1e300 overflowed the formulas
    with pytest.raises(ValueError) as exc:
        check(value)
    _assert_style(exc, "tp")
    assert check(2**53) is not None


@pytest.mark.parametrize("call, name", [
    (lambda rk, m, g: rk.Workload([0.0], [0], [1e19]), "output_tokens"),
    (lambda rk, m, g: rk.prefill_time(m, g, 1e300), "prompt_tokens"),
    (lambda rk, m, g: rk.decode_step_time(m, g, 1, 1e300), "context_length"),
    (lambda rk, m, g: rk.ContinuousBatcher(max_num_seqs=1e300), "max_num_seqs"),
    (lambda rk, m, g: rk.max_concurrent_sequences(m, g, 8192, tp=1e300), "tp"),
])
def test_huge_counts_are_refused_where_they_enter(call, name):
    import rooflinekit as rk
    model, gpu = rk.catalog.model("llama-3.1-8b"), rk.catalog.gpu("h100")
    with pytest.raises(ValueError) as exc:
        call(rk, model, gpu)
    _assert_style(exc, name)


@pytest.mark.parametrize("spec", [None, "llama-3.1-8b", 3])
def test_a_non_spec_is_a_type_error_naming_the_argument(spec):
    import rooflinekit as rk
    for call in (lambda: rk.kv_bytes_per_token(spec), lambda: rk.weight_bytes(spec)):
        with pytest.raises(TypeError) as exc:
            call()
        _assert_style(exc, "model")
