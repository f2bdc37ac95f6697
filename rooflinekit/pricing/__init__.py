"""What serving costs and which way to buy it (guide §6, §7).

- :mod:`~rooflinekit.pricing.capacity`: the ways to buy tokens — :class:`PayAsYouGo`,
  :class:`Provisioned`, :class:`SelfHosted` — with their blended price and unit cost;
- :mod:`~rooflinekit.pricing.comparisons`: break-even, crossover volume, provisioned savings,
  the price of dedicated capacity;
- :mod:`~rooflinekit.pricing.price_list`: the illustrative catalogue prices as price objects
  (the rows come from :mod:`rooflinekit.catalog`);
- :mod:`~rooflinekit.pricing.techniques`: a request's cost with prefix-cache hits (pay-as-you-go
  and on your GPUs) and a million output tokens' with speculative decoding;
- :mod:`~rooflinekit.pricing.choice`: data-residency and classification gates before cost, and
  the cheapest admissible option.
"""

from rooflinekit.pricing.comparisons import (
                                            BreakEven,
                                            break_even,
                                            capacity_price,
                                            crossover_volume,
                                            provisioned_savings,
                                            provisioned_unit_cost,
)
from rooflinekit.pricing.capacity import (
                                            PayAsYouGo,
                                            Provisioned,
                                            SelfHosted,
                                            blended_price,
                                            unit_cost,
)
from rooflinekit.pricing.choice import (
                                            CLASSIFICATIONS,
                                            Choice,
                                            Compliance,
                                            NoAdmissibleOptionError,
                                            admissibility,
                                            cheapest_option,
)
from rooflinekit.pricing.price_list import (
                                            gpu_hourly_price,
                                            load_prices,
                                            payg_price,
                                            provisioned_example,
)
from rooflinekit.pricing.techniques import (
                                            cost_per_request,
                                            payg_cost_per_request,
                                            speculative_cost_per_million_tokens,
)

__all__ = [
    "PayAsYouGo", "Provisioned", "SelfHosted", "Compliance", "Choice", "BreakEven",
    "NoAdmissibleOptionError", "CLASSIFICATIONS",
    "blended_price", "break_even", "unit_cost", "crossover_volume", "provisioned_savings",
    "provisioned_unit_cost", "capacity_price", "admissibility", "cheapest_option",
    "load_prices", "payg_price", "provisioned_example", "gpu_hourly_price",
    "cost_per_request", "payg_cost_per_request", "speculative_cost_per_million_tokens",
]
