"""asv benchmarks for the economics layer: break-even surfaces and floor-plus-spillover plans."""

import numpy as np
import xarray as xr

from rooflinekit import planning, pricing


def _axis(dim, values):
    values = np.asarray(values, dtype=float)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


class BreakEvenSurface:
    """Break-even and savings over output_fraction × input price × output price × capacity (×
    volume): one labelled call. ``n`` points per axis; n = 32 gives 32**4 ≈ 1.05e6 cells for
    the break-even, and 1.05e6 × 4 volumes for the savings."""

    params = [8, 32]
    param_names = ["n"]

    def setup(self, n):
        self.f = _axis("output_fraction", np.linspace(0.0, 1.0, n))
        self.payg = pricing.PayAsYouGo(_axis("input_per_mtok", np.linspace(0.5, 5.0, n)),
                                       _axis("output_per_mtok", np.linspace(2.0, 20.0, n)))
        self.provisioned = pricing.Provisioned(
            12_000.0, _axis("monthly_capacity_tokens", np.linspace(1e9, 8e9, n)),
            output_weight=3.0)
        self.volume = _axis("monthly_tokens", [1e9, 2e9, 4e9, 8e9])

    def time_break_even(self, n):
        pricing.break_even(self.provisioned, self.payg, self.f)

    def peakmem_break_even(self, n):
        pricing.break_even(self.provisioned, self.payg, self.f)

    def time_provisioned_savings(self, n):
        pricing.provisioned_savings(self.provisioned, self.payg, self.volume, self.f)


class BreakEvenNumpy:
    """The unlabelled path: 1e6 output fractions against one price list and commitment."""

    def setup(self):
        self.f = np.random.default_rng(0).random(1_000_000)
        self.payg = pricing.PayAsYouGo(3.0, 12.0)
        self.provisioned = pricing.Provisioned(12_000.0, 4e9, output_weight=2.0)

    def time_break_even(self):
        pricing.break_even(self.provisioned, self.payg, self.f)


class CheapestOption:
    """cheapest_option over 1e5 volumes × 10 mixes and four options."""

    def setup(self):
        self.volume = _axis("monthly_tokens", np.geomspace(1e7, 1e11, 10_000))
        self.f = _axis("output_fraction", np.linspace(0.0, 1.0, 10))
        self.options = [
            pricing.PayAsYouGo(3.0, 12.0),
            pricing.Provisioned(12_000.0, 4e9),
            pricing.Provisioned(40_000.0, 16e9, name="provisioned-large"),
            pricing.SelfHosted(8, 3.0, 25_000.0, capacity_tokens=30e9),
        ]

    def time_cheapest_option(self):
        pricing.cheapest_option(self.volume, self.options, self.f)


class Spillover:
    """plan_with_spillover and optimal_floor on seeded bursty hourly months."""

    params = ([1, 32], [3, 101])
    param_names = ["replicates", "n_quantiles"]

    def setup(self, replicates, n_quantiles):
        self.demand = xr.concat([planning.bursty_demand(seed=s) for s in range(replicates)],
                                dim="replicate")
        self.quantiles = np.linspace(0.0, 1.0, n_quantiles)
        self.payg = pricing.PayAsYouGo(3.0, 12.0)
        self.floor = pricing.Provisioned(12_000.0, 4e9)

    def time_plan_with_spillover(self, replicates, n_quantiles):
        planning.plan_with_spillover(self.demand, self.payg, self.floor, output_fraction=0.1,
                                     quantile=self.quantiles)

    def time_optimal_floor(self, replicates, n_quantiles):
        planning.optimal_floor(self.demand, self.payg, self.floor, output_fraction=0.1)

    def peakmem_plan_with_spillover(self, replicates, n_quantiles):
        planning.plan_with_spillover(self.demand, self.payg, self.floor, output_fraction=0.1,
                                     quantile=self.quantiles)
