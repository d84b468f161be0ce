"""A step that runs its pipeline schedule more than once (`pipeline_runs`: NeMo AutoModel runs it
once per gradient-accumulation step, nemo_automodel 0.7.0 recipes/llm/train_ft.py): each run is
the schedule over its share of the micro-batches, one after another on every stage
(seer/pipeline.py)."""
from __future__ import annotations

import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.forecast import run
from astral_dsl.seer.memory import stage_estimate
from astral_dsl.seer.pipeline import codes, decode, schedule_key, split_key
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, sms=132, arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def test_two_runs_of_1f1b_are_two_schedules_of_half_the_micro_batches():
    assert split_key(schedule_key("1f1b", 2)) == ("1f1b", 2)
    assert schedule_key("1f1b", 1) == "1f1b"
    # stage 0 of 2: 1F1B warms up with one forward; run 2 takes micro-batches 2 and 3
    assert [decode(x, 1, 4) for x in codes(2, 1, 4, 0, "1f1b*2")] == [
        ("F", 0, 0), ("F", 0, 1), ("B", 0, 0), ("B", 0, 1),
        ("F", 0, 2), ("F", 0, 3), ("B", 0, 2), ("B", 0, 3)]
    assert [decode(x, 1, 4) for x in codes(2, 1, 4, 1, "1f1b*2")] == [
        ("F", 0, 0), ("B", 0, 0), ("F", 0, 1), ("B", 0, 1),
        ("F", 0, 2), ("B", 0, 2), ("F", 0, 3), ("B", 0, 3)]
    # interleaved: every block of every run exactly once
    seq = codes(4, 2, 16, 1, "interleaved*2")
    assert sorted(seq) == list(range(2 * 2 * 16))


def job(runs: int, batch: int) -> JobSpec:
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=1, pp=4, dp=1), batch, 1, 8192, "full",
                   "bf16", pipeline_runs=runs)


def test_each_run_starts_when_the_first_stage_has_drained_the_last():
    # 1F1B's first stage runs a run's first forward and its last backward: with nothing to
    # reduce across replicas (dp 1), two runs of 4 micro-batches take the first run's backward
    # end on stage 0 plus one whole step of 4 (whose optimizer step ends it)
    one = run(job(1, 4), H100, NET)
    two = run(job(2, 8), H100, NET)
    assert two.job.microbatches == 8
    assert two.iteration_time == pytest.approx(one.iteration_time + one.runs[0].backward_end,
                                               rel=1e-9)
    # and more than one run of all 8: a second fill and drain of the pipeline
    assert two.iteration_time > run(job(1, 8), H100, NET).iteration_time
    # the same work: the breakdown still adds up, with the longer bubble
    assert sum(two.breakdown.values()) == pytest.approx(two.iteration_time, rel=1e-9)
    assert two.breakdown["bubble"] > run(job(1, 8), H100, NET).breakdown["bubble"]


def test_a_run_holds_its_own_micro_batches_in_memory():
    # 1F1B's stage 0 keeps min(p, m) micro-batches' activations, m a run's: of 8 micro-batches
    # on 4 stages, one or two runs hold 4, four runs (of 2) hold 2, eight runs (of 1) hold 1,
    # besides the one layer full recomputation rebuilds (memory.in_flight)
    def stage0(runs):
        fc = run(job(runs, 8), H100, NET)
        return stage_estimate(fc.job, fc.lowering.stage_params, 0).activations
    assert stage0(2) == stage0(1)
    assert stage0(1) - stage0(4) == pytest.approx(2 * (stage0(4) - stage0(8)))
    assert stage0(4) > stage0(8)
