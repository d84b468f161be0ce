"""The short fuzz run of `make test`: 40 inputs of every target of tests/fuzzing.py (compile +
check, size, forecast, render to DOT, fmt, export, the language server's handlers) with a fixed
seed, so the same inputs every run. The long campaign is `make fuzz` (100,000 inputs)."""
from __future__ import annotations

import random

import pytest

import fuzzing

PER_TARGET = 40


@pytest.mark.parametrize("target", sorted(fuzzing.TARGETS))
def test_fuzz_target_holds_its_invariant(target, tmp_path):
    found = fuzzing.campaign(PER_TARGET, seed=11, targets=[target], folder=tmp_path)
    assert not found, fuzzing.report(found, PER_TARGET, 0.0)


def test_mutations_are_deterministic_and_reach_extremes():
    a = [fuzzing.mutate(random.Random(5), fuzzing.SEEDS[0]) for _ in range(3)]
    assert a[0] == a[1] == a[2]
    rng = random.Random(5)
    texts = [fuzzing.mutate(rng, fuzzing.SEEDS[2]) for _ in range(300)]
    assert any(x in t for t in texts for x in ("1e308", "1e-300", "kW^"))
    assert all(fuzzing.SEEDS[2] != t for t in texts[:20])


def test_a_failure_is_classified_with_its_shortest_input(tmp_path, monkeypatch):
    """The harness reports what breaks the invariant (it is not a stub that passes anything)."""
    def broken(path, text, rng):
        if "site" in text:
            raise KeyError(len(text))

    monkeypatch.setitem(fuzzing.TARGETS, "broken", broken)
    found = fuzzing.campaign(20, seed=2, targets=["broken"], folder=tmp_path)
    assert list(found) == ["broken: KeyError: N"]
    text = fuzzing.report(found, 20, 1.0, tmp_path / "out")
    assert "x broken: KeyError: N" in text
    assert (tmp_path / "out" / "class00.astral").read_text() == min(found["broken: KeyError: N"],
                                                                     key=len)


def test_the_cli_invariant_catches_an_internal_error(monkeypatch):
    import astral_dsl.cli as cli

    def e000(argv):
        print("error[E000]: internal compiler error: KeyError: 1")
        return 3

    monkeypatch.setattr(cli, "main", e000)
    with pytest.raises(fuzzing.Failure, match="exit 3"):
        fuzzing._cli(["check", "x.astral"])
