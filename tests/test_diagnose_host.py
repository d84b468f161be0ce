"""A straggler whose GPU is fine and whose host is slow (a throttled or shared CPU, data
loading, the rank's Python process): its GPU waits for work, idle, its kernels at their peers'
speed, and every collective it joins waits for it. The diagnosis names the host, not the GPU
and not nothing."""
from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, observe, seer
from astral_dsl.observe.records import totals
from astral_dsl.synth import Fault, generate, write
from astral_dsl.synth.generator import PHASE_NAMES

SMALL = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "small.astral"
SLOW = 0.3


@pytest.fixture(scope="module")
def runs():
    """The small design's job (TP 8, PP 2, DP 8), seed 4, rank 112 (stage 1) 30 % slow: as
    synth's `gpu` fault makes it (its compute kernels 1.3x longer), and as a slow host makes
    it (the same run, its kernels back at their length, started where they were: the GPU idle
    for the 30 %)."""
    design = astral_dsl.load(str(SMALL))
    fc, rm = seer.forecast(design), diagnose.rank_map(design)
    gpu = rm.ranks[112].gpu
    slow_gpu = generate(fc, rm, [Fault("gpu", gpu, SLOW, 112)], seed=4)
    compute = np.isin(slow_gpu.phase, [PHASE_NAMES.index(p) for p in ("forward", "backward")])
    mine = compute & (slow_gpu.rank == 112)
    slow_host = attrs.evolve(slow_gpu, duration=np.where(mine, slow_gpu.duration / (1 + SLOW),
                                                         slow_gpu.duration))
    return design, rm, slow_gpu, slow_host


def test_idle_is_the_gpus_time_without_work(runs):
    """Rank 112's idle time per iteration (its span less the union of its records) is the 30 %
    taken off its forward and backward compute (the `gpu` fault's, not the optimizer's): c x
    1.3 became c, so 0.3 c is idle, c x 0.3 / 1.3 of the slow-GPU run's; every other rank's is
    nil."""
    design, rm, slow_gpu, slow_host = runs
    obs = write.to_observed(slow_host)
    traces = {t.rank: t for t in obs.traces}
    tot = totals(list(traces.values()))
    idle = diagnose.evidence.idle_per_rank(traces, set(slow_host.iterations), tot)
    mine = (slow_gpu.rank == 112) & np.isin(slow_gpu.phase, [PHASE_NAMES.index("forward"),
                                                              PHASE_NAMES.index("backward")])
    for it in slow_host.iterations:
        before = slow_gpu.duration[mine & (slow_gpu.iteration == it)].sum()
        assert idle[112][it] == pytest.approx(before * SLOW / (1 + SLOW), rel=0.01)
    assert max(v for r, per in idle.items() if r != 112 for v in per.values()) < 1e-4


@pytest.mark.parametrize("fmt", ["log", "traces"])
def test_a_slow_host_is_named_not_its_gpu(runs, fmt, tmp_path):
    """With either format, the slow GPU is the GPU suspect; the slow host is the host suspect
    (its rank's GPU idle about 65 ms per iteration, 0.3 / 1.3 of its 280 ms of compute, against
    nothing on its stage's other ranks), where it had been `healthy` (exit 0: its compute is
    its peers', and the collectives' time once the last member arrived is their time)."""
    design, rm, slow_gpu, slow_host = runs

    def diagnosed(s):
        if fmt == "log":
            return diagnose.diagnose(design, write.to_observed(s))
        out = tmp_path / str(id(s))
        write.write_traces(s, str(out), compress=False)
        return diagnose.diagnose(design, observe.load([str(out)]))

    host = rm.ranks[112].host
    by_gpu = diagnosed(slow_gpu)
    assert [(s.kind, s.path) for s in by_gpu.suspects] == [("gpu", rm.ranks[112].gpu)]
    result = diagnosed(slow_host)
    assert result.verdict == "suspects" and result.diagnostics == ()
    (s,) = result.suspects
    assert (s.kind, s.path, s.parts) == ("host", host, (host, rm.ranks[112].gpu))
    assert s.probability > 0.95
    ev = s.evidence[0]
    assert ev.what == "GPU idle per iteration" and ev.ranks == (112,)
    assert 0.055 < ev.observed_s < 0.075 and ev.expected_s < 1e-4
    assert "waits for its host" in s.summary and "kernels at their speed" in s.summary


def test_a_whole_slow_host_is_one_suspect(runs):
    """Every rank of host 14 (ranks 112-119, TP group 14) made slow by its host as above: one
    host suspect naming the 8 ranks (their GPUs idle about 64 ms per iteration), where their
    GPUs slow had been the host suspect of 8 GPUs computing slower."""
    design, rm, _, _ = runs
    fc = seer.forecast(design)
    slow = generate(fc, rm, [Fault("gpu", rm.ranks[r].gpu, SLOW, r) for r in range(112, 120)],
                    seed=4)
    mine = np.isin(slow.phase, [PHASE_NAMES.index("forward"), PHASE_NAMES.index("backward")]) \
        & (slow.rank >= 112) & (slow.rank < 120)
    host = attrs.evolve(slow, duration=np.where(mine, slow.duration / (1 + SLOW), slow.duration))
    (s,) = diagnose.diagnose(design, write.to_observed(host)).suspects
    assert (s.kind, s.path) == ("host", rm.ranks[112].host)
    assert s.parts == (rm.ranks[112].host,) + tuple(rm.ranks[r].gpu for r in range(112, 120))
    assert s.summary.startswith(f"host {rm.ranks[112].host}: the GPUs of ranks 112-119 wait "
                                f"for their host")
    assert s.evidence[0].ranks == tuple(range(112, 120))
