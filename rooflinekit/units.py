"""Unit constants and conventions, each defined once.

Inside the toolkit every quantity is SI: bytes, seconds, FLOP, FLOP/s, bytes/s, USD and tokens.
The constants below convert the units people quote (GiB of memory, GB of weights, TB/s of
bandwidth, TFLOP/s, prices per million tokens, hours in a month) to and from those.

Memory capacities are binary (``GiB = 2**30`` bytes, the way HBM is sized and the way the guide
quotes "80 GiB" [1]_, [2]_); weight sizes, bandwidths and FLOP/s are decimal (``GB = 1e9``), the way datasheets
and the guide quote "140 GB" and "3.35 TB/s".

References
----------
.. [1] IEC 80000-13:2008, binary prefixes (KiB, MiB, GiB).
.. [2] Serving-capacity guide §2.4 and ``docs/conventions.md`` ("Conventions that make the figures exact").
"""

from __future__ import annotations

__all__ = [
    "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB",
    "GB_PER_S", "TB_PER_S", "TFLOPS", "PFLOPS",
    "MS", "US", "PER_MILLION", "PER_THOUSAND", "HOURS_PER_MONTH", "SECONDS_PER_HOUR",
]

#: Binary memory units [bytes].
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

#: Decimal size units [bytes].
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

#: Bandwidth [bytes/s].
GB_PER_S = 1e9
TB_PER_S = 1e12

#: Throughput of arithmetic [FLOP/s].
TFLOPS = 1e12
PFLOPS = 1e15

#: Time [s].
MS = 1e-3
US = 1e-6
SECONDS_PER_HOUR = 3600.0

#: Token-count scales for prices: a price "per 1M tokens" is ``usd / PER_MILLION`` per token.
PER_MILLION = 1e6
PER_THOUSAND = 1e3

#: Hours in a billing month: 365 days × 24 h / 12 = 730 h, the cloud providers' convention and the
#: one the guide's self-hosting figure uses (8 GPUs × $3/h × 730 h = $17,520).
HOURS_PER_MONTH = 730.0
