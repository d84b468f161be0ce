"""Multi-token prediction (`mtp_layers`, Megatron-Core's mtp_num_layers): each depth a layer like
the model's last on the last chunk, with its embedding, norms, eh_proj and a second head
(seer/lower_mtp.py), its parameters and activations on the last stage, its FLOPs in the
model's; and the DeepSeek-V3 rows of Megatron-Bridge read with the recipe's depth and layout
(runs/deepseek.py)."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.evaluate import prepare_row
from astral_dsl.runs.score import model_flops_per_token
from astral_dsl.runs.table import read_table
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.forecast import layer_flops_per_token, model_flops, run
from astral_dsl.seer.memory import stage_estimate
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.params import stage_params
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.stages import chunk_layers

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, sms=132, arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
# 8 layers, the first dense, then MoE (8 experts of 512, top 2, one shared)
MOE = ModelSpec("m", 8, 1024, 8, 8, 4096, 32000, 2048, "swiglu", experts=8, top_k=2,
                shared_experts=1, moe_ffn=512, dense_layers=1)


def job(mtp: int, pp: int = 2, tp: int = 1) -> JobSpec:
    return JobSpec("j", attrs.evolve(MOE, mtp_layers=mtp), ParallelSpec(tp=tp, pp=pp, dp=1),
                   8, 1, 2048, "none", "bf16")


def test_an_mtp_depth_is_one_more_layer_of_the_last_chunk():
    assert chunk_layers(job(0)) == (((0, 4),), ((4, 4),))
    assert chunk_layers(job(1)) == (((0, 4),), ((4, 5),))
    assert chunk_layers(job(2, pp=1)) == (((0, 10),),)
    m = job(1).model
    assert (m.layer_kind(8), m.is_moe(8)) == ("T", True)      # as the last layer


def test_the_last_stage_holds_the_depth_its_projection_norms_and_the_embedding():
    # eh_proj 2 h x h = 2,097,152, three norms 3 h = 3,072, and with pipeline stages the word
    # embedding 32,000 x 1,024 = 32,768,000 besides the output layer's; the depth's layer as
    # the model's last (a MoE layer)
    with_, without = job(1), job(0)
    extra = stage_params(with_, chunk_layers(with_), 1) - stage_params(without,
                                                                        chunk_layers(without), 1)
    from astral_dsl.seer.params import layer_params
    assert extra == pytest.approx(layer_params(with_, 7) + 2_097_152 + 3_072 + 32_768_000)
    assert stage_params(with_, chunk_layers(with_), 0) == \
        stage_params(without, chunk_layers(without), 0)


def test_model_flops_count_the_depth_its_projection_and_its_logits():
    # per token: the layer's forward, eh_proj 2 x 2 h x h = 4,194,304 and the logits
    # 2 h V = 65,536,000, three times (forward and backward), for 8 x 2,048 tokens
    lin, attn = layer_flops_per_token(job(1), 7)
    added = 3 * 8 * 2048 * (lin + attn + 4_194_304 + 65_536_000)
    assert model_flops(job(1)) - model_flops(job(0)) == pytest.approx(added)


def test_the_head_chunk_runs_the_depth_and_a_second_head():
    fc = run(job(1), H100, NET)
    low = fc.lowering
    fwd = low.template(1, 0, "F")
    names = [o.name for o in fwd.ops]
    for name in ("mtp embedding", "mtp enorm", "mtp hnorm", "mtp concat", "mtp eh proj",
                 "mtp final norm", "mtp logits", "mtp cross entropy", "logits"):
        assert name in names
    # the second head's logits GEMM as the first's: 2 x 2,048 tokens x 32,000 x 1,024
    logits = [o.flops for o in fwd.ops if o.name.endswith("logits")]
    assert logits == [pytest.approx(2 * 2048 * 32000 * 1024)] * 2
    eh = next(o for o in fwd.ops if o.name == "mtp eh proj")
    assert eh.flops == pytest.approx(2 * 2048 * 1024 * 2048)
    # five layers on the last stage, its layer's operators among them
    assert {o.layer for o in fwd.ops if o.layer >= 0} == {0, 1, 2, 3, 4}
    bwd = [o.name for o in low.template(1, 0, "B").ops]
    assert "mtp eh proj dgrad" in bwd and "mtp embedding bwd" in bwd
    assert fc.iteration_time > run(job(0), H100, NET).iteration_time


def test_the_last_stage_keeps_a_second_logits_and_the_depths_inputs():
    # logits and fp32 softmax 2,048 x 32,000 x (2 + 4) bytes twice, and 5 h x 2 bytes a token
    one, none = (stage_estimate(j, run(j, H100, NET).lowering.stage_params, 1)
                 for j in (job(1), job(0)))
    assert one.logits - none.logits == pytest.approx(2048 * 32000 * 6 + 2048 * 5 * 1024 * 2)
    assert one.activations > none.activations                 # the depth's layer


def _row(rid):
    return next(r for r in read_table("astral_dsl/seer/calibration/modern.csv").runs
                if r.id == rid)


def test_megatron_bridge_deepseek_rows_run_the_recipes_layout():
    # NeMo 26.06 MXFP8 on 256 GB200s (PP 4, VP 4): the recipe's layout, [4 x 15, 1], where the
    # split counting the embedding and the loss as layers is [3, 4 x 14, 2]
    p = prepare_row(_row("r021"))
    assert p.spec.parallel.layout == (4,) * 15 + (1,)
    assert p.spec.model.mtp_layers == 0                   # not read yet (docs/runs.md)
    # B200 with PP 16 and no virtual stages: the same slices as stages
    assert chunk_layers(prepare_row(_row("r064")).spec)[15] == ((60, 1),)
    # H100 with PP 8 and VP 4 is not in the recipe's map: the derived split
    assert prepare_row(_row("r164")).spec.parallel.layout[0] == 1
    # NeMo AutoModel's DeepSeek-V3: its own split
    assert prepare_row(_row("r206")).spec.parallel.layout != (4,) * 15 + (1,)


def test_deepseek_v3_flops_a_token_with_one_depth_are_the_published_ones():
    # the NeMo rows' TFLOP/s over tokens/s: 1,292 / 4,969 = 260.0 GFLOP a token (r021), the model
    # alone 250.4; Seer's count with one depth (norms left out) within 0.3 %
    p = prepare_row(_row("r021"))
    one = attrs.evolve(p.spec, model=attrs.evolve(p.spec.model, mtp_layers=1))
    assert model_flops_per_token(one, True) == pytest.approx(1292e12 / 4969, rel=3e-3)
    assert model_flops_per_token(p.spec, True) == pytest.approx(250.45e9, rel=1e-3)
