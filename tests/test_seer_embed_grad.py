"""The embedding's dense weight gradient, every micro-batch (lower_dense.DenseOps._embed_bwd and
_embed_grad; docs/seer.md, "Stop 65, the embedding's dense gradient"): PyTorch's F.embedding
backward zero-fills a gradient of the rank's whole table (vocab/TP x hidden) before its
segment sums; autograd sums the dense gradients of a table looked up more than once on a stage
(MTP depths, a tied output layer); Megatron-Core's DDP post-hook adds the sum into the fp32
main gradient (no gradient-accumulation fusion for the embedding), Megatron FSDP copies it,
PyTorch FSDP2 adds the reduce-scattered shard into `param.grad`. Hand computations in the
comments: the streams at HBM_EFF (0.85) of the H100's 3.35 TB/s, plus 4 us a kernel."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_expert_gemm import H100, NET

DENSE = ModelSpec("dense", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu")
TABLE = 32000 * 4096                      # the table's elements at TP 1


def stream_s(nbytes, kernels=1):
    return nbytes / (3350e9 * HBM_EFF) + KERNEL_S * kernels


def backward(model=DENSE, tp=1, pp=1, zero=1, framework="megatron", stage=0, grad_dtype=None):
    job = JobSpec("j", model, ParallelSpec(tp=tp, pp=pp, dp=8, zero=zero), 64, 1, 4096, "none",
                  "bf16", framework=framework, grad_dtype=grad_dtype)
    low = Lowering(job, Costs.of(job, H100), NET)
    return low.template(stage, 0, "B").ops


def named(ops):
    return {o.name: o for o in ops}


def test_the_lookup_zero_fills_the_whole_table_then_megatron_adds_it_to_the_main_gradient():
    ops = backward()
    by = named(ops)
    # the zero-filled bf16 gradient: 32,000 x 4,096 x 2 bytes = 262.1 MB, 92.1 + 4 us
    fill = by["embedding grad zero-fill"]
    assert fill.nbytes == 2 * TABLE
    assert fill.dur == pytest.approx(stream_s(2 * TABLE))
    # the DDP post-hook's main_grad.add_(grad): read 2 bytes, read and write the fp32 main
    # gradient (4 + 4): 10 x 131.1 M = 1.31 GB, 460.3 + 4 us
    acc = by["embedding grad accumulate"]
    assert acc.nbytes == (2 + 2 * 4) * TABLE
    assert acc.dur == pytest.approx(stream_s(10 * TABLE))
    # in the lookup's order: the zero-fill, the segment sums, then the hook, the stage's last
    names = [o.name for o in ops]
    assert names.index("embedding grad zero-fill") < names.index("embedding bwd")
    assert names[-1] == "embedding grad accumulate"
    # one lookup on the stage: nothing to sum
    assert "embedding grad sum" not in by
    # bf16 main gradients read and write 2 bytes each
    assert named(backward(grad_dtype="bf16"))["embedding grad accumulate"].nbytes == 6 * TABLE


def test_tensor_parallelism_splits_the_table_by_vocabulary():
    by = named(backward(tp=2))
    assert by["embedding grad zero-fill"].nbytes == 2 * TABLE / 2
    assert by["embedding grad accumulate"].nbytes == 10 * TABLE / 2


def test_the_stages_without_the_embedding_have_none():
    # the last of two stages holds the head, no lookup (untied, no MTP)
    assert not any("embedding" in o.name for o in backward(pp=2, stage=1))


def test_mtp_lookups_sum_their_dense_gradients_once_per_stage():
    mtp = attrs.evolve(DENSE, mtp_layers=2)
    # one stage: the model's lookup and two depths': three zero-fills, two sums of the table
    # (read two, write one: 3 x 2 bytes each), one post-hook
    ops = backward(model=mtp)
    assert sum(o.name.endswith("embedding grad zero-fill") for o in ops) == 3
    by = named(ops)
    assert by["embedding grad sum"].nbytes == 2 * 3 * 2 * TABLE
    assert by["embedding grad sum"].dur == pytest.approx(stream_s(12 * TABLE, kernels=2))
    assert sum(o.name == "embedding grad accumulate" for o in ops) == 1
    # two stages: the last stage's copy of the table (Megatron-Core's MTP embedding) has its
    # two depths' lookups, one sum and its own post-hook; the first stage one lookup
    last = named(backward(model=mtp, pp=2, stage=1))
    assert last["embedding grad sum"].nbytes == 3 * 2 * TABLE
    assert last["embedding grad accumulate"].nbytes == 10 * TABLE
    assert "embedding grad sum" not in named(backward(model=mtp, pp=2, stage=0))


def test_a_tied_output_layer_on_the_stage_adds_its_zeroed_dummy_gradient():
    gpt = attrs.evolve(DENSE, activation="gelu")         # GPT-style: tied embeddings
    by = named(backward(model=gpt))
    # zero_out_wgrad (pipeline size 1): the dummy zero-filled, then summed with the lookup's
    assert by["output weight dummy grad zero-fill"].nbytes == 2 * TABLE
    assert by["embedding grad sum"].nbytes == 3 * 2 * TABLE
    # on two stages the output layer's copy is fused into its main gradient: nothing there
    assert not any("grad" in o.name and "embedding" in o.name or "dummy" in o.name
                   for o in backward(model=gpt, pp=2, stage=1))


def test_fsdp_copies_or_adds_a_shard():
    # Megatron FSDP: the hook's copy of the bf16 gradient into the fp32 main gradient
    assert named(backward(zero=3))["embedding grad copy"].nbytes == (2 + 4) * TABLE
    # PyTorch FSDP2: the table zero-filled whole; the fp32 shard of 1/8 added into param.grad
    by = named(backward(zero=3, framework="torchtitan"))
    assert by["embedding grad zero-fill"].nbytes == 2 * TABLE
    assert by["embedding grad accumulate"].nbytes == pytest.approx(3 * 4 * TABLE / 8)
