"""What serving costs and which way to buy it (guide §6, §7).

The capacity types (:mod:`~rooflinekit.pricing.capacity`), comparisons between them
(:mod:`~rooflinekit.pricing.comparisons`), the catalogue's prices as price objects
(:mod:`~rooflinekit.pricing.price_list`), costs with prefix caching and speculation
(:mod:`~rooflinekit.pricing.techniques`), and the §7 gates before the cheapest option
(:mod:`~rooflinekit.pricing.choice`). Prices are USD per 1M tokens, monthly costs USD per month,
volumes and capacities tokens per month; every numeric argument and spec field may be a number,
a numpy array or a DataArray, and results come back in the same kind.
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
