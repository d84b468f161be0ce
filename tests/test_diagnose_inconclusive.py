"""The verdict says what the job's probability says: `healthy` only while "all healthy" is the
more likely (the probability below 0.5), `inconclusive` (exit 2) when a fault is the more likely
and no part of it reaches the odds to be named, with where the probability sits and what to
collect next. A `healthy` verdict had come with 67 % (and 72 % on a flapping-link drill)."""
from __future__ import annotations

import json

import jsonschema
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import verdict as verdict_mod
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.outputs import diagnosis as diagnosis_out
from astral_dsl.outputs.report.diagnosis import diagnosis_section
from astral_dsl.resources import schema_text
from astral_dsl.synth import generate, write
from test_synth_context import ROOT, TEXT


@pytest.fixture(scope="module")
def ep():
    design = astral_dsl.loads(TEXT, name="tiny.astral", root=ROOT)
    return design, seer.forecast(design, job="ep"), diagnose.rank_map(design, "ep")


def test_the_verdict_follows_the_probability():
    """Without a named suspect: healthy below one half, inconclusive from it; a named suspect
    is `suspects` whatever else."""
    assert verdict_mod.verdict_of(False, 0.045) == "healthy"
    assert verdict_mod.verdict_of(False, 0.4999) == "healthy"
    assert verdict_mod.verdict_of(False, 0.5) == "inconclusive"
    assert verdict_mod.verdict_of(True, 0.97) == "suspects"
    assert diagnosis_out.EXIT_CODES["inconclusive"] == 2


def test_weigh_splits_the_probability_into_suspects_and_unnamed():
    """Three families, one hypothesis each (prior odds 1/3 each): the network's named with ln
    Bayes factor ln 57, the compute's unnamed at ln 3, the forecast's at ln 0 = 1. Odds: 57/3
    = 19, 3/3 = 1, 1/3: total 1 + 19 + 1 + 1/3 = 64/3, so P(all healthy) = 3/64, the suspect
    19 x 3/64 = 57/64, the compute family unnamed 3/64 and the forecast's 1/64."""
    import numpy as np

    p, per, unnamed = verdict_mod.weigh([([float(np.log(57))], np.array([]), 1),
                                         ([], np.array([np.log(3.0)]), 1),
                                         ([], np.array([0.0]), 1)])
    assert p == pytest.approx(61 / 64, rel=1e-12)
    assert per == [[pytest.approx(57 / 64, rel=1e-12)], [], []]
    assert unnamed == [0.0, pytest.approx(3 / 64, rel=1e-12), pytest.approx(1 / 64, rel=1e-12)]


def test_a_probable_fault_nothing_can_name_is_inconclusive(ep):
    """A drill of job `ep` (seed 3) with rank 9's GPU 0.8 % slow: it computes 1.049x its stage's
    median (1.066x in its slowest iteration), enough for a Bayes factor that holds 71 % of the
    job's probability and too little (odds below 19 to 1 after the 16 GPUs share the compute
    family's prior) to be named. The verdict is `inconclusive`, exit 2, the probability the
    compute family's unnamed share (nothing named: the suspects hold none of it), and the text,
    the JSON and the review page say where it sits and what to collect. (Until stop 62 the
    drill injected nothing: seed 3's noise alone gave rank 9 1.040x and 68 %; with stop 62's
    forecast of the job it gives 17 %, healthy. Until stop 63 the GPU was 0.6 % slow, 71 %;
    with stop 63's forecast that gives 49 %, healthy: the drill's fault is sized to the
    forecast it perturbs. Stop 63's fit gave this drill 70 %, stop 64's 72 %, stop 65's 79 %,
    stop 66's 83 %, stop 68's 71 %.)"""
    from astral_dsl.synth.faults import Fault

    design, fc, rm = ep
    slow = Fault("gpu", rm.ranks[9].gpu, 0.008, 9)
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [slow], seed=3)),
                              job="ep")
    assert not found.suspects and found.verdict == "inconclusive"
    assert found.probability == pytest.approx(0.7122, abs=1e-4)
    assert found.unnamed["compute"] == pytest.approx(found.probability, rel=1e-9)
    assert found.unnamed["network"] + found.unnamed["forecast"] < 1e-9
    gpu = rm.ranks[9].gpu
    assert found.next_steps.startswith(f"71 % of it sits with a GPU (or a TP group's GPUs) "
                                       f"slower than its stage in some iterations (the "
                                       f"likeliest: GPU {gpu} (rank 9): 1.049x its stage")
    assert "diagnose more iterations (3 read" in found.next_steps
    assert "profiler traces instead of rank logs" in found.next_steps
    verdict = diagnosis_out.final_verdict(found, found.diagnostics)
    assert verdict == "inconclusive" and diagnosis_out.EXIT_CODES[verdict] == 2
    text = diagnosis_out.render(found, verdict=verdict)
    assert "verdict    inconclusive: probability 71 % that something is wrong" in text
    assert "no suspect named, and a fault is the more likely: 71 % of it sits" in text
    assert "within the noise" not in text
    doc = json.loads(json.dumps(diagnosis_out.verdict_json(verdict) | diagnosis_out.to_json(
        found, verdict) | {"version": "t", "format": 1, "valid": True, "diagnostics": [],
                           "file": None}))
    jsonschema.validate(doc, json.loads(schema_text("diagnosis")))
    assert doc["exit_code"] == 2 and doc["next_steps"] == found.next_steps
    assert "no suspect named, and a fault is the more likely" in diagnosis_section(doc)
    # part of the input unusable besides (a host's clock, E789): `unusable`, what could not be
    # used may be where the probability sits; the next steps still said
    jumped = Diagnostic("E789", Severity.ERROR, "the clock of host ... cannot be aligned", None,
                        "a clock that jumped")
    verdict = diagnosis_out.final_verdict(found, (jumped,))
    assert verdict == "unusable"
    assert "71 % of it sits" in diagnosis_out.render(found, verdict=verdict)


def test_a_healthy_run_stays_healthy_and_says_nothing_to_collect(ep):
    """Seed 1 of the same drill: the probability at the documented floor (0.045 with three
    iterations), `healthy`, exit 0, no next steps; the JSON has them null."""
    design, fc, rm = ep
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                              job="ep")
    assert found.verdict == "healthy" and found.probability == pytest.approx(0.045, abs=1e-3)
    assert found.next_steps == "" and diagnosis_out.to_json(found)["next_steps"] is None
