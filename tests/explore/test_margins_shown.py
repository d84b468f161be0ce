"""What `astral check --margins` prints a demanding reader: a limit's sides rounded as the
other outputs round (`66.382 GB <= 193.2735 GB` had four decimals of a GPU's 180 GiB), and a
parameter's compilable range with what bounds it ("holds for every scalable_units searched
(1 .. 500000); the design compiles only while scalable_units <= 500000 (E316)" named no reason
for a count of units no one would build: it is where the transformers' count, twice the
parameter, passes its plausible 1,000,000)."""
from __future__ import annotations

from pathlib import Path

from astral_dsl.explore import margins
from astral_dsl.explore.margins.limits import Limit
from astral_dsl.outputs.margins import _figures, phrase

REPO = Path(__file__).resolve().parents[2]
GIB = 2 ** 30 * 8.0            # a memory limit's sides are in bits


def test_a_gpus_memory_reads_as_w750_gives_it():
    lim = Limit("memory:j", "memory", "memory per GPU of job j", 66.382e9 * 8, 180 * GIB, "<=",
                "GB")
    assert _figures(lim) == ("66.38 GB", "193.3 GB (180 GiB)", "126.9 GB")


def test_about_four_significant_digits_and_thousands_grouped():
    lim = Limit("f", "feeder", "feeder F", 672989.7, 800e3, "<=", "kW")
    assert _figures(lim) == ("673 kW", "800 kW", "127 kW")
    lim = Limit("c", "cdu_n1", "cdu", 62668.8e3, 66000e3, "<=", "kW")
    assert _figures(lim) == ("62,668.8 kW", "66,000 kW", "3,331.2 kW")
    lim = Limit("v", "voltage_drop", "voltage drop", 0.008716, 0.01, "<=", "%")
    assert _figures(lim) == ("0.8716 %", "1 %", "0.1284 %")
    lim = Limit("n", "check", "count", 524288, 524288, "==", "")
    assert _figures(lim)[:2] == ("524,288", "524,288")


def test_two_sides_that_differ_do_not_read_alike():
    lim = Limit("f", "feeder", "feeder F", 800.04e3, 800e3, "<=", "kW")
    lhs, rhs, margin = _figures(lim)
    assert lhs != rhs and (lhs, rhs) == ("800.04 kW", "800 kW") and margin == "-0.04 kW"


def test_the_compilable_range_says_what_bounds_it():
    report = margins.analyse(str(REPO / "examples" / "dgx_superpod.astral"),
                             params=["scalable_units"])
    texts = {phrase(report, r) for m in report.margins for r in m.ranges
             if r.param == "scalable_units" and r.compiles_high is not None}
    assert texts == {"for every scalable_units searched (1 .. 500000) [numeric bracket]; the "
                     "design compiles only while scalable_units <= 500000 (E316: `count` past "
                     "its plausible range, at most 1000000, at examples/dgx_superpod.astral:76)"}
