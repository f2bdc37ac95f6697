"""The guide command's sections carry the guide's figures, computed live (guide §2–§7)."""

import json

import pytest

from rooflinekit import cli, guide


@pytest.fixture(scope="module")
def sections():
    return {s.key: s for s in guide.build()}


def _fig(section, start):
    hits = [f for f in section.figures if f.label.startswith(start)]
    assert hits, f"no figure starting {start!r} in {section.key}"
    return hits[0]


def test_all_sections_build_in_guide_order(sections):
    assert list(sections) == guide.section_names()
    for s in sections.values():
        assert s.figures and s.title


def test_roofline_figures(sections):
    s = sections["roofline"]
    assert _fig(s, "bytes read per batch-1").ours == pytest.approx(140)           # GB, §3.1
    assert _fig(s, "batch-1 decode step").ours == pytest.approx(41.79, abs=0.005)  # ms, conventions
    assert _fig(s, "ridge point").ours == pytest.approx(295.2, abs=0.05)          # conventions
    assert _fig(s, "batch-1 decode arithmetic").ours == 1.0                       # conventions
    arithmetic = _fig(s, "arithmetic time")
    assert not arithmetic.agrees and arithmetic.ours == pytest.approx(0.1416, abs=1e-4)
    zero = _fig(s, "per-token cost fall, batch 1 -> 128, zero")
    assert not zero.agrees and zero.ours == pytest.approx(128)                    # conventions
    assert _fig(s, "per-token cost fall, batch 1 -> 128, 2,390").ours == pytest.approx(75, abs=0.5)


def test_batching_figures(sections):
    s = sections["batching"]
    # guide §4.3 / conventions: 1,220 and 440 ticks; 336.67 and 67.5 ticks of service latency
    assert _fig(s, "static batching makespan").ours == 1220
    assert _fig(s, "continuous batching makespan").ours == 440
    assert _fig(s, "mean latency, static").ours == pytest.approx(336.67, abs=0.005)
    assert _fig(s, "mean latency, continuous").ours == 67.5
    assert "911.67" in _fig(s, "mean latency, static").note        # from arrival, named
    assert _fig(s, "peak KV, budgeting the final").ours <= 1000
    assert _fig(s, "peak KV, budgeting only the prompt").ours > 1000
    assert _fig(s, "a request longer").ours == "rejected"
    assert all(f.agrees for f in s.figures)
    ratios = [row[2] for row in s.tables[0].rows]     # latency ratio grows with spread
    assert ratios == sorted(ratios) and ratios[-1] > 3


def test_pricing_figures(sections):
    s = sections["pricing"]
    assert all(f.agrees for f in s.figures)
    assert _fig(s, "break-even utilisation of 4B at 10%").ours == pytest.approx(76.92, abs=0.005)
    assert _fig(s, "break-even utilisation of 4B at 50%").ours == pytest.approx(40.0, abs=1e-9)


def test_self_hosting_discrepancy_is_marked(sections):
    s = sections["spillover"]
    month = _fig(s, "self-hosting month")
    assert not month.agrees and month.ours == 42_520 and "25" in month.note
    assert _fig(s, "… the guide's total").ours == 17_545
    assert any("Discrepancy" in n for n in s.notes)
    assert _fig(s, "same volume, restricted").ours == "self-hosted"


def test_parallel_figures(sections):
    s = sections["parallel"]
    assert _fig(s, "smallest TP for 8 sequences").ours == 2
    assert _fig(s, "smallest TP for 183").ours == 8
    assert all(f.agrees for f in s.figures)


def test_json_has_every_section(capsys):
    assert cli.main(["guide", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in data] == guide.section_names()
