"""The overlapped parameter gather as Megatron-Core chains it (param_gather._chain): one bucket in
flight, dispatched when the previous one is waited for (0.15.0 param_and_grad_buffer.py
`finish_param_sync`), every bucket of a layer waited for at that layer."""
import attrs

from astral_dsl.seer.param_gather import _chain
from test_seer_expert_dp import GPU, MOE, NET, job


def test_one_bucket_ahead_of_the_compute():
    # items: 3 layers of 2, 1 and 1 s; buckets (first item, seconds): layer 0's of 1 s,
    # layer 1's two of 1 s (it spans two buckets), layer 2's of 0.5 s.
    done, end = _chain([(0, 1.0), (1, 1.0), (1, 1.0), (2, 0.5)], [2.0, 1.0, 1.0])
    # layer 0 waits for its bucket (1 s), then dispatches layer 1's first (ready at 2 s), and
    # runs to 3 s; layer 1 finds it ready, dispatches its second (3 -> 4 s) and waits for it,
    # then dispatches layer 2's (4 -> 4.5 s) and runs to 5 s; layer 2 starts at 5 s.
    assert done == [1.0, 4.0, 5.0]
    assert end == 4.5


def test_gathers_back_to_back_when_the_compute_is_slower():
    # a bucket per layer, each shorter than a layer: every gather but the first is hidden
    done, end = _chain([(0, 0.5), (1, 0.5), (2, 0.5)], [1.0, 1.0, 1.0])
    # layer 1's bucket goes out at 0.5 s (layer 0's wait), layer 2's at 1.5 s (layer 1's)
    assert done == [0.5, 1.5, 2.5]
    assert end == 2.0


def test_a_layer_larger_than_its_bucket_waits_for_each():
    # one layer in three buckets of 1 s: the second and third are waited for in turn
    done, end = _chain([(0, 1.0), (0, 1.0), (0, 1.0)], [0.5])
    assert done == [3.0]
    assert end == 3.0


def test_aligned_chunks_gather_back_to_back():
    # with virtual stages (align_param_gather) a chunk's buckets go out all at once: each
    # item waits for its own bucket only, the compute not counted
    done, end = _chain([(0, 1.0), (1, 1.0), (1, 1.0), (2, 0.5)], [2.0, 1.0, 1.0], back_to_back=True)
    assert done == [1.0, 3.0, 3.5]
    assert end == 3.5



def _back_to_back_calls(monkeypatch, job):
    """The `back_to_back` argument of every _chain call of a forecast of `job`."""
    from astral_dsl.seer import param_gather
    from astral_dsl.seer.forecast import run

    calls = []
    real = param_gather._chain

    def spy(pieces, compute, back_to_back=False):
        calls.append(back_to_back)
        return real(pieces, compute, back_to_back)

    monkeypatch.setattr(param_gather, "_chain", spy)
    run(job, GPU, NET)
    return set(calls)


def test_the_host_sets_whether_the_buckets_chain(monkeypatch):
    """The hooks dispatch on the host, and waiting for a bucket blocks the compute stream, not
    the host: a host that waits for each MoE layer's token counts keeps pace with the compute
    (chained); with CUDA graphs (no token-count wait) or a dense model it runs ahead and the
    buckets go out back to back."""
    moe = attrs.evolve(job(), overlap_param_gather=True)
    assert moe.host_counts
    assert _back_to_back_calls(monkeypatch, moe) == {False}
    assert _back_to_back_calls(monkeypatch, attrs.evolve(moe, cuda_graphs=True)) == {True}
    dense = attrs.evolve(moe, model=attrs.evolve(MOE, experts=0, top_k=0, moe_ffn=0))
    assert _back_to_back_calls(monkeypatch, dense) == {True}
