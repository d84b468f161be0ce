"""An interleaved pipeline's sends with Megatron-Core's overlap_p2p_comm (`pp_overlap`): the
sender goes on once its previous send has arrived, instead of waiting for its own
(seer/schedule.py `_run`). Hand-computed on two stages, two chunks, two micro-batches."""
from types import SimpleNamespace

import pytest

from astral_dsl.seer import schedule

F, B, HOP = 1.0, 2.0, 0.5


class Low:
    """What the schedule reads of a lowering: one-GPU data parallelism (no gradient reduction,
    no optimizer), blocks of fixed length, one p2p hop."""

    def __init__(self, overlap: bool):
        par = SimpleNamespace(pp=2, v=2, schedule="interleaved", zero=0, gpus=1)
        self.job = SimpleNamespace(parallel=par, pp_overlap=overlap, overlap_param_gather=False,
                                   overlap_grad_reduce=False, schedule_key="interleaved")
        self.groups = {"dp": SimpleNamespace(n=1)}
        self.synced = False              # nothing to reduce

    def p2p_hops(self):
        """Boundary 0 -> 1 and the wrap-around 1 -> 0 (the same pairs with two stages)."""
        return (HOP, HOP)

    def template(self, i, c, phase):
        return SimpleNamespace(duration=F if phase == "F" else B)

    def stage_key(self, i):
        return i                         # each stage its own (Lowering.stage_key)

    def optimizer_time(self, i):
        return 0.0


def _stage0(overlap):
    runs, total = schedule.simulate(Low(overlap), 2)
    return runs[0], total


def test_synchronous_send_holds_the_sender():
    run, _ = _stage0(False)
    # stage 0: F(chunk 0, mb 0) in [0, 1]; its activation reaches stage 1 at 1.5, and the
    # synchronous send holds stage 0 until then: F(chunk 0, mb 1) starts at 1.5
    assert run.order[:2] == [("F", 0, 0), ("F", 0, 1)]
    assert (run.start[0], run.end[0]) == (0.0, 1.0)
    assert run.start[1] == pytest.approx(1.5)


def test_overlapped_send_lets_the_sender_go_on():
    run, _ = _stage0(True)
    # the same first send, overlapped: F(chunk 0, mb 1) starts as F(chunk 0, mb 0) ends; its
    # own send leaves at 2.0 (the link is free since 1.5) and reaches stage 1 at 2.5
    assert run.start[1] == pytest.approx(1.0)
    assert run.end[1] == pytest.approx(2.0)
    assert [(s, e) for s, e, _ in run.sends[:2]] == [(1.0, 1.5), (2.0, 2.5)]


def test_overlap_never_lengthens_the_iteration():
    assert _stage0(True)[1] <= _stage0(False)[1]


def test_one_chunk_ignores_it():
    # Megatron-Core's 1F1B without interleaving exchanges synchronously (batch_p2p_comm)
    low_sync, low_over = Low(False), Low(True)
    for low in (low_sync, low_over):
        low.job.parallel.v, low.job.parallel.schedule = 1, "1f1b"
    a, ta = schedule.simulate(low_sync, 2)
    b, tb = schedule.simulate(low_over, 2)
    assert ta == tb and a[0].start == b[0].start


@pytest.mark.parametrize("hop", [0.5, 3.0])     # 3.0: sends queue on the PP stream
@pytest.mark.parametrize("overlap", [False, True])
def test_walk_is_the_simulation(hop, overlap, monkeypatch):
    from astral_dsl.seer.walk import iteration_time

    monkeypatch.setattr(Low, "p2p_hops", lambda self: (hop, hop))
    for m in (2, 4, 6):
        low = Low(overlap)
        assert iteration_time(low, m).hex() == schedule.simulate(low, m)[1].hex()
