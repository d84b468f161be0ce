"""What Seer's shortcuts give is what the long way gives, to the bit: a run of layers of one shape
copied instead of built (template.Builder.each), the schedule walked by its _Steps, and a
forecast's iteration time without its memory estimate and breakdown (forecast.iteration)."""
from __future__ import annotations

import pytest

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.table import read_table
from astral_dsl.seer.forecast import iteration, run
from astral_dsl.seer.calibration import RUN_FILES, priors
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.memory import offload_obstacle
from astral_dsl.seer.template import Builder

FIELDS = ("name", "cat", "stream", "dur", "flops", "nbytes", "group", "layer", "deps", "start",
          "end", "shape", "kernels")


@pytest.fixture(scope="module")
def jobs():
    """The calibration's runs (dense, MoE, hybrid Mamba, fp8 recipes, tensor-parallel overlaps,
    ZeRO and FSDP, CUDA graphs or not) with the rule's choices, and variants that offload."""
    out = []
    for name in ("a100", "modern"):
        for p in prepare(read_table(RUN_FILES[name])):
            if p.status == "ok":
                out.append((run(p.spec, p.gpu, p.net, calibration=priors()).job, p.gpu, p.net))
    out += [(j.with_(offload_layers=2), gpu, net) for j, gpu, net in out
            if j.model.layers > 3 and offload_obstacle(j, gpu.host_bw) is None]
    return out


def _templates(job, gpu, net):
    low = Lowering(job, Costs.of(job, gpu, None, priors()), net)
    par = job.parallel
    return [low.template(i, c, ph) for i in range(par.pp) for c in range(par.v) for ph in "FB"]


def _counting(each, bodies, copy):
    def counted(self, layers, body, key=None):
        def count(L):
            bodies[copy] += 1
            body(L)
        each(self, layers, count, key if copy else None)
    return counted


def test_copied_layers_are_the_built_ones(jobs, monkeypatch):
    each, bodies = Builder.each, {True: 0, False: 0}
    monkeypatch.setattr(Builder, "each", _counting(each, bodies, True))
    copied = [_templates(*j) for j in jobs]
    monkeypatch.setattr(Builder, "each", _counting(each, bodies, False))
    built = [_templates(*j) for j in jobs]
    assert bodies[True] < 0.8 * bodies[False]      # layers were copied
    ops = 0
    for a, b in zip(copied, built):
        for ta, tb in zip(a, b):
            assert (ta.duration, ta.host, ta.flops, ta.compute, ta.exposed) == \
                (tb.duration, tb.host, tb.flops, tb.compute, tb.exposed)
            assert ta.layer_ends() == tb.layer_ends()
            assert [[getattr(o, f) for f in FIELDS] for o in ta.ops] == \
                [[getattr(o, f) for f in FIELDS] for o in tb.ops]
            ops += len(ta.ops)
    assert ops > 100_000


def test_iteration_is_the_forecasts(jobs):
    for job, gpu, net in jobs[::7]:
        f = run(job, gpu, net, calibration=priors())
        assert iteration(job, gpu, net, priors()) == (f.job, f.iteration_time)
    job, gpu, net = jobs[0]        # the rule chooses: the forecast's choice and time
    free = job.with_(micro=None, recompute="auto")
    f = run(free, gpu, net, calibration=priors())
    assert iteration(free, gpu, net, priors()) == (f.job, f.iteration_time)
