"""What Seer's shortcuts give is what the long way gives, to the bit: a run of layers of one shape
copied instead of built (template.Builder.each; ZeRO-3 / FSDP jobs' too, each layer waiting for
its own weights' gather), the schedule walked by its _Steps, a
forecast's iteration time without its memory estimate and breakdown (forecast.iteration),
that time walked by a walk._Program instead of schedule.simulate, and what stages of one key
share (Lowering.stage_key). A forecast's lowering is freed by its references, and a design's
fabrics are counted once while it lives."""
from __future__ import annotations

import gc
import operator
import weakref
from pathlib import Path

import attrs
import pytest

import astral_dsl

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.table import read_table
from astral_dsl.seer.forecast import iteration, run
from astral_dsl.seer.calibration import RUN_FILES, priors, shipped
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.memory import offload_obstacle
from astral_dsl.seer.param_gather import _stage_gates
from astral_dsl.seer.schedule import runnable, simulate
from astral_dsl.seer.template import Builder
from astral_dsl.seer.walk import iteration_time

REPO = Path(__file__).resolve().parents[1]
FIELDS = ("name", "cat", "stream", "dur", "flops", "nbytes", "group", "layer", "deps", "start",
          "end", "shape", "kernels")
FIELDS_OF = operator.attrgetter(*FIELDS)      # an op's FIELDS as a tuple (in C: 130,000 ops)


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


def _lowered(job, gpu, net):
    """The job's Lowering under the priors, and its templates (each stage's, chunk's and
    phase's)."""
    low = Lowering(job, Costs.of(job, gpu, None, priors()), net)
    par = job.parallel
    return low, [low.template(i, c, ph) for i in range(par.pp) for c in range(par.v)
                 for ph in "FB"]


def _counting(each, bodies, copy):
    def counted(self, layers, body, key=None, own=range(0)):
        def count(L):
            bodies[copy] += 1
            body(L)
        each(self, layers, count, key if copy else None, own)
    return counted


@pytest.fixture(scope="module")
def copied(jobs):
    """Each job's Lowering and templates as Seer builds them (a run of layers of one shape
    copied), and the number of layer bodies that ran: compared below with templates built
    layer by layer, and the same Lowerings walked by test_walk_is_the_simulation (what it would
    make for each job: their templates are not built twice, 1.3 s of CPU)."""
    each, bodies = Builder.each, {True: 0, False: 0}
    Builder.each = _counting(each, bodies, True)
    try:
        lowered = [_lowered(*j) for j in jobs]
    finally:
        Builder.each = each
    return lowered, bodies[True]


def test_copied_layers_are_the_built_ones(jobs, copied, monkeypatch):
    lowered, copies = copied
    each, bodies = Builder.each, {True: copies, False: 0}
    monkeypatch.setattr(Builder, "each", _counting(each, bodies, False))
    built = [_lowered(*j)[1] for j in jobs]
    assert bodies[True] < 0.8 * bodies[False]      # layers were copied
    ops = 0
    for (_, a), b in zip(lowered, built):
        for ta, tb in zip(a, b):
            assert (ta.duration, ta.host, ta.flops, ta.compute, ta.exposed) == \
                (tb.duration, tb.host, tb.flops, tb.compute, tb.exposed)
            assert ta.layer_ends() == tb.layer_ends()
            assert list(map(FIELDS_OF, ta.ops)) == list(map(FIELDS_OF, tb.ops))
            ops += len(ta.ops)
    assert ops > 100_000


def test_a_chunk_with_offloaded_layers_copies_the_rest(jobs, monkeypatch):
    """A one-stage job offloading its first 2 layers (the offloading variants above, whose
    templates test_copied_layers_are_the_built_ones compares with the built ones): of its L
    layers, each pass builds the 2 offloaded, the one after them in the backward (it reloads
    the 2nd), the last (it reloads itself) and two of each run of alike layers, and copies the
    rest: for a dense model (one shape) at most 2 + 2 + 2 + 1 + 2 = 9 bodies a pass, 18 both,
    where building every layer ran 2 L."""
    offloading = [j for j in jobs if j[0].offload_layers == 2 and j[0].parallel.pp == 1
                  and not j[0].model.hybrid and not j[0].model.experts
                  and j[0].parallel.zero < 3 and j[0].model.layers >= 24]
    assert offloading
    for job, gpu, net in offloading:
        bodies = {True: 0, False: 0}
        monkeypatch.setattr(Builder, "each", _counting(Builder.each, bodies, True))
        _lowered(job, gpu, net)
        monkeypatch.undo()
        assert bodies[True] <= 18 < 2 * job.model.layers, job.name


def test_iteration_is_the_forecasts(jobs):
    for job, gpu, net in jobs[::7]:
        f = run(job, gpu, net, calibration=priors())
        assert iteration(job, gpu, net, priors()) == (f.job, f.iteration_time)
    job, gpu, net = jobs[0]        # the rule chooses: the forecast's choice and time
    free = job.with_(micro=None, recompute="auto")
    f = run(free, gpu, net, calibration=priors())
    assert iteration(free, gpu, net, priors()) == (f.job, f.iteration_time)


def _variants(jobs):
    """Other schedules of the calibration's pipelines: other micro-batch counts (interleaved:
    some not a multiple of p, whose sends go out one by one), GPipe, the weights' gather
    overlapped with the forward (ZeRO-1) or not, the gradients' reduction after the backward,
    an interleaved pipeline's sends overlapped (pp_overlap) or not."""
    out = []
    for job, gpu, net in jobs:
        par = job.parallel
        if par.pp < 2 or par.pp * par.v > 64:
            continue
        for m in sorted({par.pp + 1, par.pp + 2, 2 * par.pp - 2, 2 * par.pp - 1, 2 * par.pp}):
            if runnable(par.pp, par.v, m, par.schedule):
                out.append((job.with_(global_batch=m * job.micro * par.dp), gpu, net))
        if par.v == 1:
            out.append((job.with_(parallel=attrs.evolve(par, schedule="gpipe")), gpu, net))
        else:                # sends overlapped with the next block (pp_overlap) or not
            out.append((job.with_(pp_overlap=not job.pp_overlap), gpu, net))
        if par.dp > 1:
            out.append((job.with_(parallel=attrs.evolve(par, zero=1), overlap_param_gather=True,
                                  overlap_grad_reduce=True), gpu, net))
            out.append((job.with_(parallel=attrs.evolve(par, zero=1), overlap_param_gather=False,
                                  overlap_grad_reduce=False), gpu, net))
    return out


def test_walk_is_the_simulation(jobs, copied):
    variants = _variants(jobs[::3])
    assert len(variants) > 80

    def lowerings():
        for (job, _, _), (low, _) in zip(jobs, copied[0]):     # under the priors
            yield job, low
        for job, gpu, net in variants:
            yield job, Lowering(job, Costs.of(job, gpu, None, shipped()), net)

    for job, low in lowerings():
        assert iteration_time(low, job.microbatches).hex() == \
            simulate(low, job.microbatches)[1].hex(), job.name


def _unalike(hops):
    """Each boundary at its own hop: x1, x1.5, x2 in turn, the wrap-around 0.1 ms more."""
    p = len(hops)
    return tuple(h * (1.0 + 0.5 * (b % 3)) + (1e-4 if b == p - 1 else 0.0)
                 for b, h in enumerate(hops))


def test_walk_is_the_simulation_with_boundaries_unalike(jobs, copied):
    """Boundaries between stages priced apart (pipeline_pairs.boundaries): walk._Program's
    per-boundary hop slots and schedule._run's per-key hops give the same times to the bit,
    with batched exchanges, sends one by one (m not a multiple of p) and overlapped sends."""
    cases = [(job, low) for (job, _, _), (low, _) in list(zip(jobs, copied[0]))[::3]
             if job.parallel.pp > 1]
    for job, gpu, net in jobs[::9]:          # an interleaved pipeline's sends overlapped or not
        if job.parallel.pp > 1 and job.parallel.v > 1:
            flip = job.with_(pp_overlap=not job.pp_overlap)
            cases.append((flip, Lowering(flip, Costs.of(flip, gpu, None, priors()), net)))
    assert len(cases) > 10 and any(job.pp_overlap for job, _ in cases)
    moved = 0
    for job, low in cases:
        par = job.parallel
        even = low.p2p_hops()
        ms = [job.microbatches] + ([par.pp + 1] if runnable(par.pp, par.v, par.pp + 1,
                                                            par.schedule) else [])
        try:
            for m in ms:
                low.__dict__["_hops"] = even
                before = simulate(low, m)[1]
                low.__dict__["_hops"] = _unalike(even)
                after = simulate(low, m)[1]
                assert iteration_time(low, m).hex() == after.hex(), (job.name, m)
                moved += after != before
        finally:
            low.__dict__["_hops"] = even
    assert moved > 10


def _fsdp_jobs(jobs):
    """The calibration's ZeRO-3 / FSDP jobs, one of each kind (framework, pipeline or not,
    interleaved or not, MoE or dense, recomputation, TP, CP, offloading), and each also with
    its weights resharded after the forward or kept (reshard_after_forward flipped: the
    backward gathers them again or not) and with `recompute = full` of each chunk's first 2
    layers only (recompute_layers)."""
    kinds = {}
    for job, gpu, net in jobs:
        par = job.parallel
        if par.zero >= 3:
            kind = (job.framework, par.pp > 1, par.v > 1, job.model.experts > 0, job.recompute,
                    par.tp > 1, par.cp > 1, bool(job.offload_layers))
            kinds.setdefault(kind, (job, gpu, net))
    out = []
    for job, gpu, net in kinds.values():
        par = job.parallel
        out += [(job, gpu, net), (job.with_(parallel=attrs.evolve(
            par, reshard_after_forward=not par.reshard_after_forward)), gpu, net)]
        if job.model.layers // (par.pp * par.v) > 3:
            out.append((job.with_(recompute="full", recompute_layers=2), gpu, net))
    return out


def test_fsdp_layers_copied_are_the_built_ones(jobs, monkeypatch):
    """ZeRO-3 / FSDP: each layer waits for its own weights' gather, issued ahead of the
    layers (lower.py), and in the backward ends with its gradients' reduce-scatter; a run of
    alike layers is copied all the same (Builder.each's `own`), to the bit: the templates, the
    iteration time walked and simulated. Counted: a one-stage dense job without offloading or
    partial recomputation builds 5 layers, where building every layer ran 2 L: in the forward
    the first 2 (the first's chain starts at the embedding's last op as the second's at the
    first's last: alike), in the backward 3 (a layer ends with its reduce-scatter, a side op:
    the first's chain starts at the head's last op, the second's at the first's last chained
    op, one before its last op: the first is not alike)."""
    fsdp = _fsdp_jobs(jobs)
    frameworks = {job.framework for job, _, _ in fsdp}
    assert frameworks == {"megatron", "automodel", "torchtitan"} and len(fsdp) > 30
    assert any(j.parallel.pp > 1 for j, _, _ in fsdp) and any(j.model.experts for j, _, _ in fsdp)
    each = Builder.each
    copied, built, plain = [], [], 0
    for job, gpu, net in fsdp:
        bodies = {True: 0, False: 0}
        monkeypatch.setattr(Builder, "each", _counting(each, bodies, True))
        copied.append(_lowered(job, gpu, net))
        monkeypatch.setattr(Builder, "each", _counting(each, bodies, False))
        built.append(_lowered(job, gpu, net))
        monkeypatch.undo()
        par = job.parallel
        if par.pp == 1 and not job.model.experts and not job.model.hybrid and \
                not job.offload_layers and job.recompute_layers is None:
            assert (bodies[True], bodies[False]) == (5, 2 * job.model.layers), job.name
            plain += 1
    assert plain > 10
    for (job, _, _), (la, a), (lb, b) in zip(fsdp, copied, built):
        for ta, tb in zip(a, b):
            assert (ta.duration, ta.host, ta.flops, ta.compute, ta.exposed) == \
                (tb.duration, tb.host, tb.flops, tb.compute, tb.exposed), job.name
            assert ta.layer_ends() == tb.layer_ends()
            assert list(map(FIELDS_OF, ta.ops)) == list(map(FIELDS_OF, tb.ops)), job.name
        m = job.microbatches
        assert iteration_time(la, m).hex() == iteration_time(lb, m).hex(), job.name
        assert simulate(la, m)[1].hex() == simulate(lb, m)[1].hex(), job.name


def test_stages_of_one_key_share_what_each_would_work_out(jobs, copied):
    """Stages of one key (Lowering.stage_key: their groups, their chunks' layer shapes, the
    embedding or the head, offloaded layers) share their chunks' templates, their overlapped
    parameter gather and their optimizer step: each is, to the bit, what the stage works out
    alone (its own template key, param_gather._stage_gates, _optimizer_time) on a lowering
    that has shared nothing. The sharing lowerings are Seer's as `copied` built them (their
    templates are not built again: 1.5 s of CPU)."""
    shared = viewed = gated = 0
    for (job, gpu, net), (low, _) in zip(jobs, copied[0]):
        alone = Lowering(job, Costs.of(job, gpu, None, priors()), net)
        par = job.parallel
        keys = [low.stage_key(i) for i in range(par.pp)]
        shared += len(set(keys)) < len(keys)
        viewed += len(low.stage_lowerings()) > 1
        gates = job.overlap_param_gather and par.zero in (1, 2) and low.synced
        if gates:
            simulate(low, job.microbatches)      # each stage key's gates, as the forecast's
            gated += 1
        for i in range(par.pp):
            for c in range(par.v):
                for ph in "FB":
                    a, b = low.template(i, c, ph), alone.at(i)._template(i, c, ph)
                    assert (a.duration, a.host, a.layer_ends()) == \
                        (b.duration, b.host, b.layer_ends()), job.name
                    assert list(map(FIELDS_OF, a.ops)) == list(map(FIELDS_OF, b.ops)), job.name
            assert low.optimizer_time(i).hex() == alone._optimizer_time(i).hex(), job.name
            if gates:
                assert low.__dict__["_memo_gates"][keys[i]] == _stage_gates(alone, i), job.name
    # (the tables' jobs hold enough of each kind to exercise it: 55 sharing a key, 5 with more
    # than one stage lowering, 129 gated at stop 63, whose readings left one job fewer with
    # stages lowered apart)
    assert shared > 50 and viewed >= 5 and gated > 100, (shared, viewed, gated)


def test_a_lowering_without_views_is_freed_as_its_last_reference_goes(jobs):
    """A lowering refers to no other and not to itself unless it has views (Lowering.at): a
    forecast's is freed at once, not left for the cyclic collector (whose pass after a
    forecast walked the last one's templates too)."""
    job, gpu, net = next((j, g, n) for j, g, n in jobs if j.parallel.pp > 1
                         and len(_lowered(j, g, n)[0].stage_lowerings()) == 1)
    enabled = gc.isenabled()
    gc.disable()
    try:
        low, _ = _lowered(job, gpu, net)
        simulate(low, job.microbatches)
        gone = weakref.ref(low)
        del low
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


def test_a_designs_fabrics_are_counted_once_while_it_lives(own_heap, monkeypatch):
    """cluster_of counts the design's fabrics (analyses/network.fabric_counts) once per design,
    not once per forecast: a second cluster of the same design reads the same counts and is the
    first; the counts go with the design."""
    from astral_dsl.seer import cluster

    calls = []

    def counted(design, cache=None):
        calls.append(design)
        return fabric_counts(design, cache)
    fabric_counts = cluster.fabric_counts
    monkeypatch.setattr(cluster, "fabric_counts", counted)
    design = astral_dsl.load(REPO / "examples" / "single_pod.astral")
    job = design.jobs[0]
    first, second = cluster.cluster_of(design, job), cluster.cluster_of(design, job)
    assert len(calls) == 1 and first == second
    other = astral_dsl.load(REPO / "examples" / "single_pod.astral")
    assert cluster.cluster_of(other, other.jobs[0]) == first and len(calls) == 2
    gone = weakref.ref(design)
    del design, job, calls[:]
    gc.collect()
    assert gone() is None and other in cluster._FABRICS


def test_a_jobs_cluster_is_made_once_per_design_and_gpu_count(own_heap, monkeypatch):
    """validate_job with other degrees (a search's or a rule's candidates, a sweep's points) asks
    for the job's cluster again: it is read from the design once per GPU count, the same as a
    fresh one, and goes with the design."""
    from astral_dsl.seer import cluster

    calls = []

    def counted(design, job):
        calls.append(job)
        return placement_of(design, job)
    placement_of = cluster.placement_of
    monkeypatch.setattr(cluster, "placement_of", counted)
    design = astral_dsl.load(REPO / "examples" / "single_pod.astral")
    job = design.jobs[0]
    first = cluster.cluster_of(design, job, ranks=512)
    assert cluster.cluster_of(design, job, ranks=512) is first and len(calls) == 1
    other = cluster.cluster_of(design, job, ranks=64)
    assert len(calls) == 2 and other is not first
    fresh = astral_dsl.load(REPO / "examples" / "single_pod.astral")
    assert cluster.cluster_of(fresh, fresh.jobs[0], ranks=64) == other and len(calls) == 3
    gone = weakref.ref(design)
    del design, job, first, other
    gc.collect()
    assert gone() is None
