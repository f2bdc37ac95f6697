"""Tests of rooflinekit.pricing.choice: admissibility gates and the cheapest option (guide §6, §7)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit.pricing.choice import (CLASSIFICATIONS, Choice, Compliance, NoAdmissibleOptionError,
                                    admissibility, cheapest_option)
from rooflinekit.pricing import PayAsYouGo, Provisioned, SelfHosted, break_even

from helpers import da



# -- cheapest option and admissibility (§7) -------------------------------------------------------
def test_cheapest_option_exact_tie_goes_to_payg():
    # $4/$4 per 1M at 3B tokens = $12,000 = the commitment's cost, exactly.
    prov = Provisioned(12_000.0, 4e9)
    payg = PayAsYouGo(4.0, 4.0)
    for options in ([prov, payg], [payg, prov]):
        choice = cheapest_option(3e9, options, 0.3)
        assert choice.costs["provisioned"] == choice.costs["pay-as-you-go"] == 12_000.0
        assert choice.option is payg and choice.name == "pay-as-you-go"
        assert "tie" in choice.reason


def test_cheapest_option_tie_with_float_noise(guide_provisioned, guide_payg):
    # The §6.3 break-even volume: costs agree to float rounding; PAYG wins the tie.
    v = break_even(guide_provisioned, guide_payg, 0.1).tokens
    assert cheapest_option(v, [guide_provisioned, guide_payg], 0.1).name == "pay-as-you-go"
    assert cheapest_option(v * 1.01, [guide_provisioned, guide_payg], 0.1).name == "provisioned"


def test_cheapest_option_restricted_workload_takes_self_hosting():
    payg = PayAsYouGo(3.0, 12.0, region="eu")
    prov = Provisioned(12_000.0, 4e9, region="eu")
    sh = SelfHosted(8, 3.0, 25_000.0, region="eu")
    restricted = Compliance("restricted", allowed_regions=["EU"], name="credit decisions")
    choice = cheapest_option(1e9, [payg, prov, sh], 0.1, workload=restricted)
    assert choice.option is sh
    assert choice.cost == pytest.approx(42_520.0)
    assert choice.cost > payg.cost(1e9, 0.1)  # it costs more, and it is the only admissible one
    assert set(choice.excluded) == {"pay-as-you-go", "provisioned"}
    assert "third party" in choice.excluded["pay-as-you-go"]
    assert "only admissible" in choice.reason
    # The same options for internal data: cost decides.
    assert cheapest_option(1e9, [payg, prov, sh], 0.1).option is payg


def test_cheapest_option_residency_gate():
    us = PayAsYouGo(1.0, 2.0, name="us-api", region="us")
    eu = PayAsYouGo(3.0, 12.0, name="eu-api", region="eu")
    unknown = PayAsYouGo(0.5, 1.0, name="somewhere")
    wl = Compliance("confidential", allowed_regions=("eu",))
    choice = cheapest_option(1e9, [us, eu, unknown], 0.1, workload=wl)
    assert choice.name == "eu-api"
    assert "us" in choice.excluded["us-api"] and "does not state" in choice.excluded["somewhere"]


def test_cheapest_option_none_admissible_says_so():
    payg = PayAsYouGo(3.0, 12.0, region="us")
    prov = Provisioned(12_000.0, 4e9, region="us")
    wl = Compliance("restricted", name="payments")
    with pytest.raises(NoAdmissibleOptionError, match="no admissible option for 'payments'") as e:
        cheapest_option(1e9, [payg, prov], 0.1, workload=wl)
    assert isinstance(e.value, ValueError)
    assert set(e.value.excluded) == {"pay-as-you-go", "provisioned"}


def test_cheapest_option_over_capacity_gives_none():
    sh = SelfHosted(8, 3.0, 25_000.0, capacity_tokens=2e9, region="ch")
    wl = Compliance("restricted", allowed_regions=["ch"])
    choice = cheapest_option(3e9, [sh, PayAsYouGo(3.0, 12.0)], 0.1, workload=wl)
    assert choice.option is None and choice.name is None and choice.cost == math.inf
    assert "capacity" in choice.reason


def test_cheapest_option_ndarray(guide_provisioned, guide_payg):
    choice = cheapest_option(np.array([1e9, 3.5e9, 5e9]), [guide_provisioned, guide_payg], 0.1)
    assert list(choice.name) == ["pay-as-you-go", "provisioned", "pay-as-you-go"]
    np.testing.assert_allclose(choice.cost, [3_900.0, 12_000.0, 5e9 * 3.9e-6], rtol=1e-12)
    assert choice.option is None


def test_cheapest_option_dataarray(guide_provisioned, guide_payg):
    v = da([1e9, 3.5e9], "monthly_tokens")
    choice = cheapest_option(v, [guide_provisioned, guide_payg], np.array([0.1, 0.5]))
    assert set(choice.name.dims) == {"monthly_tokens", "output_fraction"}
    assert choice.name.sel(monthly_tokens=3.5e9, output_fraction=0.5).item() == "provisioned"
    assert choice.name.sel(monthly_tokens=1e9, output_fraction=0.1).item() == "pay-as-you-go"
    assert choice.cost.attrs["units"] == "USD/month"


def test_cheapest_option_scalar_result_types(guide_provisioned, guide_payg):
    choice = cheapest_option(5e9, [guide_provisioned, guide_payg], 0.5)
    assert isinstance(choice, Choice) and isinstance(choice.cost, float)


def test_admissibility_and_workload():
    assert CLASSIFICATIONS[-1] == "restricted"
    assert Compliance("restricted").allows_third_party is False
    assert Compliance("restricted", third_party_allowed=True).allows_third_party is True
    assert Compliance("public").allows_third_party is True
    assert admissibility(SelfHosted(1, 1.0, 0.0), Compliance("restricted")) is None
    with pytest.raises(ValueError, match="classification"):
        Compliance("secret")
    with pytest.raises(ValueError, match="allowed_regions"):
        Compliance(allowed_regions=[])


def test_cheapest_option_rejects_bad_options(guide_payg):
    with pytest.raises(ValueError, match="at least one"):
        cheapest_option(1e9, [], 0.1)
    with pytest.raises(ValueError, match="unique names"):
        cheapest_option(1e9, [guide_payg, PayAsYouGo(1.0, 2.0)], 0.1)
    with pytest.raises(TypeError, match=r"options\[1\]"):
        cheapest_option(1e9, [guide_payg, "self-hosted"], 0.1)


# -- properties -----------------------------------------------------------------------------------
prices = st.floats(0.01, 100.0)
fractions = st.floats(0.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(v=st.floats(1e6, 1e11), f=fractions, cost=st.floats(100.0, 1e5), c_in=prices,
       c_out=prices)
def test_cheapest_option_is_cheapest(v, f, cost, c_in, c_out):
    options = [Provisioned(cost, 1e12), PayAsYouGo(c_in, c_out), SelfHosted(1, 1.0, cost / 2)]
    choice = cheapest_option(v, options, f)
    assert choice.cost <= min(choice.costs.values()) * (1 + 1e-9)
