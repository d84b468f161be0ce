"""A run of other parallel sizes than the job states (E792): tests/fixtures/diagnose/small.astral's
`small` is tp 8, pp 2, dp 8 on 128 GPUs; the same GPUs run tp 4, pp 4, dp 8 or tp 4, pp 2, dp 16.
Its collectives would be matched on groups they never ran in, so nothing is compared, and it is
said once for the job, not once a rank."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import diagnose, observe, seer
from astral_dsl.synth import generate, write
from clirun import astral

SMALL = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "small.astral"
DECLARED = "tp = 8, pp = 2, dp = 8"


def _drill(tmp_path, parallel: str, traces: bool, gpus: int = 128) -> str:
    """A healthy drill of `small` run with `parallel` instead (on `gpus`), as a log or a trace
    directory."""
    text = SMALL.read_text(encoding="utf-8")
    assert DECLARED in text and "gpus = 128" in text
    path = tmp_path / "ran.astral"
    path.write_text(text.replace(DECLARED, parallel).replace("gpus = 128", f"gpus = {gpus}"),
                    encoding="utf-8")
    design = astral_dsl.load(str(path))
    data = generate(seer.forecast(design), diagnose.rank_map(design), [], iterations=2, seed=3)
    out = tmp_path / ("traces" if traces else "ran.csv")
    if traces:
        write.write_traces(data, str(out))
    else:
        write.write_log(data, str(out))
    return str(out)


@pytest.mark.parametrize("parallel, traces, example", [
    ("tp = 4, pp = 4, dp = 8", False,
     "e.g. rank 0 exchanges pipeline transfers with rank 32; its pipeline neighbours in the "
     "job are ranks [64]"),
    ("tp = 4, pp = 4, dp = 8", True,
     "e.g. rank 0 runs in the DP group `dp-0` of ranks [0, 4, 8, 12, 16, 20, ...]; in the job "
     "its DP group is ranks [0, 8, 16, 24, 32, 40, ...]"),
    ("tp = 4, pp = 2, dp = 16", True,
     "e.g. rank 0 runs in the DP group `dp-0` of ranks [0, 4, 8, 12, 16, 20, ...]; in the job "
     "its DP group is ranks [0, 8, 16, 24, 32, 40, ...]"),
])
def test_a_run_of_other_sizes_is_said_once_and_not_compared(tmp_path, parallel, traces, example):
    """The log of tp 4, pp 4 had set aside the clocks of 9 of its 16 hosts (E789) and said
    `no suspect: every rank and collective is within the noise`; its traces, and those of
    tp 4, dp 16, had been one E790 a rank (128 of them, 512 lines of text)."""
    observed = _drill(tmp_path, parallel, traces)
    design = astral_dsl.load(str(SMALL))
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(design, observe.load([observed]))
    said = [d for d in err.value.diagnostics if d.is_error]
    assert [d.code for d in said] == ["E792"]
    assert said[0].message == (
        "the observed data fits no rank order of `small`'s layout (tp 8, dp 8, pp 2): 128 of "
        "the 128 ranks whose number, pipeline peers, process groups or exchanges are read are "
        "not the job's in its order tp-cp-ep-dp-pp, and no other order fits them: the run had "
        "other parallel sizes")
    assert said[0].notes == (example,)
    proc = astral("diagnose", str(SMALL), "--observed", observed)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2 and text.count("error[") == 1
    assert "does not match the job's parallel layout" in text


def test_the_declared_sizes_are_not_refused(tmp_path):
    """A healthy drill of the sizes the job states: no E792, exit 0."""
    observed = _drill(tmp_path, DECLARED, False)
    found = diagnose.diagnose(astral_dsl.load(str(SMALL)), observe.load([observed]))
    assert found.verdict == "healthy"
    assert "E792" not in {d.code for d in found.diagnostics}


def test_a_log_of_more_ranks_is_said_once_a_kind_and_not_compared(tmp_path):
    """A log of the job on 256 GPUs (dp 16) read as the job of 128: its ranks 128-255 and the
    pipeline peers of ranks 0-127 are outside the job. They had been one E786 a rank (256,
    about 900 lines), and ranks 0-127 diagnosed without their pipeline: "every stage computes
    2.01x faster than the forecast" (a replica's 2 micro-batches where the job's have 4)."""
    observed = _drill(tmp_path, "tp = 8, pp = 2, dp = 16", False, gpus=256)
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(astral_dsl.load(str(SMALL)), observe.load([observed]))
    assert [(d.code, d.message) for d in err.value.diagnostics] == [
        ("E786", "128 ranks (128-255) are outside the job's 128 ranks: left out"),
        ("E786", "128 ranks (0-127): 1,024 record(s) name a peer outside the job's 128 ranks "
                 "(e.g. 128, of rank 0): left out"),
        ("E792", "the observed data fits no rank order of `small`'s layout (tp 8, dp 8, pp 2): "
                 "256 of the 256 ranks whose number, pipeline peers, process groups or "
                 "exchanges are read are not the job's in its order tp-cp-ep-dp-pp, and no "
                 "other order fits them: the run had other parallel sizes")]
    assert err.value.diagnostics[2].notes == (
        "e.g. rank 0 exchanges pipeline transfers with rank 128, outside the job's 128 ranks",)


MOE = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "moe.astral"


@pytest.mark.parametrize("declared", ["tp = 1, pp = 2, dp = 24", "tp = 4, pp = 2, dp = 6"])
def test_a_moe_run_read_as_a_dense_job_is_not_compared(tmp_path, declared):
    """A drill of moe.astral's `moe` (ep 8, pp 2 on 48 GPUs) diagnosed as a job of the same 48
    GPUs without expert parallelism: its EP exchanges are none of the job's (E792, nothing
    compared). DeepSeek-V3's log read as examples/gb200_nvl72.astral's llama405b (256 GPUs
    each, their pipeline peers in one pipeline group) had named 9 hosts at 100 % for EP
    exchanges of one rank."""
    text = MOE.read_text(encoding="utf-8")
    ran = "tp = 1, pp = 2, dp = 24, ep = 8"
    assert text.count(ran) == 1
    design = astral_dsl.load(str(MOE))
    data = generate(seer.forecast(design, job="moe"), diagnose.rank_map(design, "moe"), [],
                    iterations=1, seed=5)
    log = tmp_path / "moe.csv"
    write.write_log(data, str(log))
    dense = tmp_path / "dense.astral"
    dense.write_text(text.replace(ran, declared), encoding="utf-8")
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(astral_dsl.load(str(dense)), observe.load([str(log)]), job="moe")
    [d] = [d for d in err.value.diagnostics if d.is_error]
    assert d.code == "E792" and "48 of the 48 ranks" in d.message
    assert d.notes == ("e.g. rank 0 records EP all-to-alls; the job has no expert parallelism "
                       "(ep 1)",)
    found = diagnose.diagnose(design, observe.load([str(log)]), job="moe")
    assert found.verdict == "healthy"


def test_a_dense_runs_traces_read_as_a_moe_job_are_not_compared(tmp_path):
    """The other way: moe.astral's `moe` run without expert parallelism (ep 1, the same 48
    GPUs, tp 1, pp 2, dp 24), its drill written by `astral synth`, diagnosed as `moe` (ep 8).
    Its traces list no EP process group and record no all-to-all, but their DP and pipeline
    groups are the job's: they had been diagnosed, `something is wrong` at >99 % (its compute
    1.8x the MoE forecast, every expert local). Now E792, nothing compared, as the MoE run read
    as a dense job is. Its rank log cannot tell (a log need not record the all-to-alls): it is
    diagnosed as before, no E792."""
    text = MOE.read_text(encoding="utf-8")
    ran = "tp = 1, pp = 2, dp = 24, ep = 8"
    dense = tmp_path / "dense.astral"
    dense.write_text(text.replace(ran, "tp = 1, pp = 2, dp = 24"), encoding="utf-8")
    for out in ("traces", "dense.csv"):
        proc = astral("synth", str(dense), "--job", "moe", "-o", str(tmp_path / out),
                      "--iterations", "1", "--seed", "3")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(astral_dsl.load(str(MOE)), observe.load([str(tmp_path / "traces")]),
                          job="moe")
    [d] = [d for d in err.value.diagnostics if d.is_error]
    assert d.code == "E792" and "`moe`'s layout (ep 8, dp 24, pp 2): 48 of the 48 ranks" \
        in d.message
    assert d.notes == ("e.g. rank 0 lists no EP process group and records no EP all-to-all; "
                       "the job has expert parallelism (ep 8)",)
    found = diagnose.diagnose(astral_dsl.load(str(MOE)), observe.load([str(tmp_path /
                                                                          "dense.csv")]),
                              job="moe")
    assert "E792" not in {d.code for d in found.diagnostics}


def test_a_runs_traces_without_context_parallelism_read_as_a_cp_job_are_not_compared(tmp_path):
    """tiny.astral's 16 H100s run tp 4, dp 4; the job states tp 4, cp 2, dp 2. The traces'
    DP groups ({0, 4, 8, 12}) are none of the job's groups, but a group of an unused kind is
    not compared, and no CP process group or ring step is in them: E792, as for EP."""
    from jobtext import job

    model = ('model Mini { layers = 2, hidden = 2048, heads = 16, kv_heads = 8, ffn = 8192, '
             'vocab = 32000, seq = 8192, activation = swiglu, source = "a test model" }\n')
    base = (SMALL.parent / "tiny.astral").read_text(encoding="utf-8") + model
    batch = "global_batch = 8, micro = 1, seq = 8192"
    ran, stated = (astral_dsl.loads(base + job("ctx", "Mini", 16, parallel, batch, "Tiny"),
                                    name="tiny.astral", root=SMALL.parent)
                   for parallel in ("tp = 4, pp = 1, dp = 4", "tp = 4, cp = 2, pp = 1, dp = 2"))
    data = generate(seer.forecast(ran, job="ctx"), diagnose.rank_map(ran, "ctx"), [],
                    iterations=1, seed=3)
    write.write_traces(data, str(tmp_path))
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(stated, observe.load([str(tmp_path)]), job="ctx")
    [d] = [d for d in err.value.diagnostics if d.is_error]
    assert d.code == "E792" and d.notes == (
        "e.g. rank 0 lists no CP process group and records no CP ring step; the job has "
        "context parallelism (cp 2)",)
