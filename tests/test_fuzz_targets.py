"""The short fuzz run of `make test`: 40 inputs of every front-end target of tests/fuzzing.py
(compile + check, size, forecast, render to DOT, fmt, export, the language server's handlers)
and a few of each deeper one (tests/fuzz_deep.py: forecasts where Seer's rules choose, margins,
diff between revisions, rank logs and traces, edits and cancels sent to a language server,
runs tables), with
a fixed seed, so the same inputs every run. The long campaigns are `make fuzz` (100,000 inputs)
and `make fuzz-deep` (20,000 inputs of the deeper targets)."""
from __future__ import annotations

import random

import pytest

import fuzzing

PER_TARGET = 40
# the deeper targets cost more per input (a forecast, sympy, git, a language server). Runs
# tables: the first 20 inputs of seed 11 take every branch of the target (a table refitted on
# itself and its fit read back, a refit refused, a malformed fit, a user's systems file); inputs
# 21-40 had added a second refit, 2.7 of their 3.2 s of CPU (`make fuzz` runs thousands).
DEEP_PER_TARGET = {"forecast-rule": 8, "margins": 5, "diff-rev": 6, "observed": 6,
                   "lsp-cancel": 3, "runs": 20}


@pytest.mark.parametrize("target", sorted(fuzzing.TARGETS))
def test_fuzz_target_holds_its_invariant(target, tmp_path):
    n = DEEP_PER_TARGET.get(target, PER_TARGET)
    stats = {}
    found = fuzzing.campaign(n, seed=11, targets=[target], folder=tmp_path, stats=stats)
    assert not found, fuzzing.report(found, n, 0.0, stats=stats)
    assert stats[target][:2] == [n, 0]


def test_every_deep_target_is_sampled():
    assert set(DEEP_PER_TARGET) == set(fuzzing.DEEP)


def test_deep_invariants_catch_what_they_guard(monkeypatch, tmp_path):
    """Not stubs: a job `check` passes that `forecast` refuses is a failure, and so is a diff
    that shows a file from outside the repository."""
    import fuzz_deep

    def refuses(args):
        if args[0] == "check":
            return 0, '{"diagnostics": []}'
        return 1, "error[E760]: no"

    monkeypatch.setattr(fuzz_deep, "_cli_rc", refuses)
    monkeypatch.setattr(fuzz_deep, "_cli", lambda args: refuses(args)[1])
    with pytest.raises(fuzzing.Failure, match="check passes, forecast exits 1"):
        fuzz_deep._forecast_rule(tmp_path / "f.astral", "", random.Random(1))
    (tmp_path / "astral.toml").write_text("")
    monkeypatch.setattr(fuzz_deep, "_cli", lambda args: fuzz_deep.SECRET)
    for seed in range(40):            # until both sides are revisions
        rng = random.Random(seed)
        try:
            fuzz_deep._diff_rev(tmp_path / "f.astral", "site S { }\n", rng)
        except fuzzing.Failure as exc:
            assert "outside the repository" in str(exc)
            break
    else:
        raise AssertionError("the leak was never caught")


def test_a_field_made_a_param_keeps_its_value():
    import fuzz_deep

    text = fuzz_deep.parametrize(random.Random(3), "rack R { power_limit = 45 kW }\n")
    assert text.startswith("param fz_power_limit_0 = 45 kW\n")
    assert "power_limit = fz_power_limit_0" in text


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
