"""The guide's figures, recomputed live: data for ``rooflinekit guide``.

Each section function returns a :class:`Section`: the guide's quoted figures beside ours (with a
mark and a reason where they differ) and the tables its text refers to. Nothing here derives a
number: every value comes from the formula and simulation layers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from . import catalog, memory, units

__all__ = ["Figure", "Table", "Section", "SECTIONS", "build", "section_names"]


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure the guide quotes: its words, its value, ours, and whether they agree."""

    label: str
    guide: str
    ours: float | int | str
    unit: str = ""
    agrees: bool = True
    note: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Table:
    """A table the guide's text refers to but does not show, printed in full."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]

    def as_dict(self) -> dict:
        return {"title": self.title, "columns": list(self.columns),
                "rows": [list(r) for r in self.rows]}


@dataclasses.dataclass(frozen=True)
class Section:
    """One of the guide command's sections."""

    key: str
    title: str
    figures: tuple[Figure, ...]
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"key": self.key, "title": self.title,
                "figures": [f.as_dict() for f in self.figures],
                "tables": [t.as_dict() for t in self.tables], "notes": list(self.notes)}


def _close(ours: float, guide: float, rel: float) -> bool:
    return abs(ours - guide) <= rel * abs(guide)


def memory_section() -> Section:
    """§2: KV bytes per token, the memory budget and concurrency by attention layout."""
    model = catalog.model("guide-70b")
    gpu = catalog.gpu("guide-lab-80GB")
    ctx = 8192
    per_token = memory.kv_bytes_per_token(model)
    per_seq = memory.kv_bytes_per_sequence(model, ctx)
    weights = memory.weight_bytes(model)
    one_card = memory.max_concurrent_sequences(model, gpu, ctx, tp=1)
    budget = memory.usable_kv_bytes(model, gpu, tp=8)
    layouts = {"MHA": model.replace(n_kv_heads=model.n_heads),
               "GQA-8": model, "MQA": model.replace(n_kv_heads=1)}
    seqs = {k: memory.max_concurrent_sequences(v, gpu, ctx, tp=8) for k, v in layouts.items()}
    figures = (
        Figure("KV bytes per token (L=80, H_kv=8, d=128, fp16)", "327,680 B ≈ 320 KiB",
               per_token, "B", per_token == 327_680),
        Figure("KV of one 8,192-token sequence", "2.5 GiB", per_seq / units.GiB, "GiB",
               per_seq == 2.5 * units.GiB),
        Figure("70B weights at fp16", "140 GB ≈ 130 GiB", weights / units.GiB, "GiB",
               _close(weights / units.GiB, 130, 0.01)),
        Figure("8k sequences on one 80 GiB card", "0 (does not fit)", one_card, "",
               one_card == 0),
        Figure("KV budget on 8 × 80 GiB, 10% reserve", "459 GiB", budget / units.GiB, "GiB",
               round(budget / units.GiB) == 459),
        Figure("concurrent 8k sequences, GQA-8", "183", seqs["GQA-8"], "", seqs["GQA-8"] == 183),
        Figure("concurrent 8k sequences, MHA", "22", seqs["MHA"], "", seqs["MHA"] == 22),
        Figure("concurrent 8k sequences, MQA", "1,467", seqs["MQA"], "", seqs["MQA"] == 1467),
    )
    contexts = (1024, 2048, 4096, 8192, 16384, 32768, 131072)
    rows = tuple(
        (name, f"{v.kv_bytes_per_token / units.KiB:,.0f}",
         *(memory.max_concurrent_sequences(v, gpu, c, tp=8) for c in contexts))
        for name, v in layouts.items()
    )
    table = Table("Concurrent sequences on 8 × 80 GiB (70B fp16, 10% reserve) by context",
                  ("layout", "KiB/token", *(f"{c:,}" for c in contexts)), rows)
    notes = (
        "Conventions: memory in GiB (2^30 B), weights in decimal GB; the 10% reserve comes off "
        "what remains after the weights; sequence counts are floored.",
    )
    return Section("memory", "KV cache and memory budget (§2)", figures, (table,), notes)


#: Section key -> builder, in the guide's order.
SECTIONS: dict[str, Callable[[], Section]] = {
    "memory": memory_section,
}


def section_names() -> list[str]:
    """Keys accepted by ``rooflinekit guide --section``."""
    return list(SECTIONS)


def build(keys: list[str] | None = None) -> list[Section]:
    """Compute the requested sections (all by default)."""
    keys = section_names() if not keys else keys
    unknown = [k for k in keys if k not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    return [SECTIONS[k]() for k in keys]
