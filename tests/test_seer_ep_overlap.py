"""The expert all-to-all overlap (`ep_overlap`, Megatron-Core's overlap_moe_expert_parallel_comm):
which passes its combined 1F1B schedule pairs (spec.ep_overlap_share), the hidden share off the
side op (lower_comm.py), W751 where Megatron-Core cannot run it, and which NVIDIA rows
ran it (runs/ep_overlap.py: Megatron-Bridge 0.6.0's and 0.6.2's performance recipes). Numbers by
hand."""
from __future__ import annotations

import pytest

from astral_dsl.runs.ep_overlap import recipe_ep_overlap
from astral_dsl.runs.table import parse_table
from astral_dsl.seer import comm
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec, ep_overlap_share

from test_runs import _csv, _row

MOE = ModelSpec("M", 4, 1024, 16, 8, 2048, 32000, 2048, "swiglu", experts=8, top_k=2,
                moe_ffn=1024)
GPU = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3.35e12, 450e9, 700.0, 700.0, 132, "hopper")
# EP 4 across 4 hosts of 1 GPU: the all-to-all crosses the 50 GB/s network
NET = comm.Network(1, 450e9, (50e9,), (comm.Tier("leaf", 32, True, 1.0),
                                       comm.Tier("core", 10**6, False, 1.0)))


def test_the_schedule_pairs_these_passes():
    """No pipeline (combined_1f1b_schedule_for_no_pipelining): the first forward and the last
    backward alone, 15 of 16 paired. pp 4 without virtual stages: Megatron-Core refuses the
    overlap, 0. pp 4 with 4 virtual stages and 64 micro-batches: 256 passes, the ranks' mean
    warm-up (4 - 1) + (4 - 1) x 4 + 1 = 16 alone: 240 / 256 = 0.9375. pp 2, v 2, 1 micro-batch:
    2 passes, warm-up 1 + 2 + 1 = 4 > 2: none paired. One micro-batch without a pipeline: 0."""
    assert ep_overlap_share(1, 1, 16) == 15 / 16
    assert ep_overlap_share(4, 1, 64) == 0.0
    assert ep_overlap_share(4, 4, 64) == 0.9375
    assert ep_overlap_share(2, 2, 1) == 0.0
    assert ep_overlap_share(1, 1, 1) == 0.0


def _job(overlap, pp=1, v=1):
    par = ParallelSpec(pp=pp, dp=4, ep=4, zero=1, v=v,
                       schedule="interleaved" if v > 1 else "1f1b")
    return JobSpec("j", MOE, par, 16, 1, 2048, "none", "bf16", ep_overlap=overlap)


@pytest.fixture(scope="module")
def costs():
    return Costs(GPU, "bf16", calibration=shipped())


def test_the_hidden_share_is_that_of_the_paired_passes(costs):
    """4 micro-batches a rank (16 / (1 x 4)) without a pipeline: 3 of 4 passes paired, so
    ep_hidden x 3/4 of each all-to-all is the hidden side op, the rest the waited-for one
    (before: ep_hidden of every all-to-all, whatever the schedule)."""
    h = shipped().ep_hidden
    plain = Lowering(_job(False), costs, NET).template(0, 0, "F")
    lapped = Lowering(_job(True), costs, NET).template(0, 0, "F")
    t = next(o.dur for o in plain.ops if o.layer == 0 and o.name == "ep dispatch all-to-all")
    ops = {o.name: o for o in lapped.ops if o.layer == 0}
    assert ops["ep dispatch all-to-all"].dur == pytest.approx(t * (1 - 0.75 * h))
    assert ops["ep dispatch all-to-all (overlapped)"].dur == pytest.approx(0.75 * h * t)


def test_no_overlap_with_a_pipeline_without_virtual_stages(costs):
    """pp 2 without virtual stages: Megatron-Core refuses the overlap, Seer forecasts without
    it (W751 says so at the field); with 2 virtual stages it hides."""
    flat = Lowering(_job(True, pp=2), costs, NET).template(0, 0, "F")
    assert not any(o.name.endswith("(overlapped)") for o in flat.ops)
    assert any(o.name.endswith("(overlapped)")
               for o in Lowering(_job(True, pp=2, v=2), costs, NET).template(0, 0, "F").ops)


def test_w751_for_a_pipeline_without_virtual_stages(tmp_path):
    """Mixtral 8x7B with pp 2 and ep 8, `ep_overlap = true`: Megatron-Core refuses it without
    virtual stages; W751 at the field says it is forecast without it. With virtual stages, none;
    with the interleaved schedule and its virtual stages left to the rule, none either (the
    rule chooses 2 or more: it had compared the unchosen count with 1, E000, found by fuzzing)."""
    import astral_dsl
    from astral_dsl.seer import validate_jobs

    src = """import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Mixtral_8x7B }
site S { hosts = 8 x HGX8(gpu = H100_SXM, nic = CX7_400G) }
job j {
  model = Mixtral_8x7B, placement = S, gpus = 64
  parallel { tp = 1, pp = 2, dp = 32, ep = 8%s }
  batch { global_batch = 256, micro = 1, seq = 4096 }
  ep_overlap = true
}
"""
    found = []
    for extra in ("", ", virtual_stages = 2, schedule = interleaved", ", schedule = interleaved"):
        path = tmp_path / f"j{len(extra)}.astral"
        path.write_text(src % extra)
        found.append([d for d in validate_jobs(astral_dsl.load(path)) if d.code == "W751"])
    assert [d.message for d in found[0]] == [
        "job `j`: ep_overlap has no effect with pp = 2 and no virtual stages: Megatron-Core "
        "overlaps the expert all-to-all only in the interleaved schedule (it refuses the "
        "setting otherwise); forecast without it"]
    assert (found[0][0].span.start.line, found[0][0].span.start.column) == (8, 16)
    assert "virtual_stages" in found[0][0].hint and found[1] == [] and found[2] == []


def test_the_rows_read_their_recipes_overlap():
    """Megatron-Bridge 0.6.2 (0.6.0 alike): on for DeepSeek-V3 on GB200 in MXFP8
    (deepseek/common.py:75), off in BF16 (gb200/deepseek_v3.py:29); on for GPT-OSS 120B on
    GB200, off on B200; on for Qwen3 235B on H100 (h100/qwen3_moe.py:147). Rows of releases
    before NeMo 26.06 are read without it: their own performance recipes are not available and
    the library recipes of their time leave it off (r048: NeMo 26.04.01's Qwen3 235B on H100,
    which 0.6.0's recipe would overlap); off where Megatron-Core cannot run it (pp > 1 and no virtual
    stages)."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r001"), _row("r121"), _row("r003"), _row("r109"), _row("r048"), _row("r047"),
            _row("r001", id="old", source_version="NeMo 25.07 container")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, True, r.count("tp", 1), r.count("pp", 1), 4).fields)
           ["ep_overlap"] for r in t.runs}
    assert got == {"r001": True, "r121": False, "r003": True, "r109": False, "r048": False,
                   "r047": False, "old": False}
    assert recipe_ep_overlap("qwen3235ba22b", "h100", "fp8", (26, 4), 8, 4, 16)[1].endswith(
        "leave it off; Megatron-Bridge 0.6.0's performance recipe (perf_recipes/) for the "
        "model, GPU and precision sets it")
    # each row names the recipe release it is read with: 0.6.0's through NeMo 26.08, 0.6.2's
    # after (recompute_recipe.recipes_of)
    for release, version in (((26, 6), "0.6.0"), ((26, 8), "0.6.0"), ((26, 10), "0.6.2")):
        on, said = recipe_ep_overlap("deepseekv3", "gb200", "mxfp8", release, 4, 4, 64)
        assert on and f"Megatron-Bridge {version}'s performance recipe" in said
    # NeMo 25.04 and 25.07 ran Megatron-Core 0.12 and 0.13, which have no such option
    assert recipe_ep_overlap("mixtral8x7b", "gb200", "fp8", (25, 4), 1, 1, 8) == (
        False, "no expert all-to-all overlap: NeMo 2.x's Megatron-Core (0.12, 0.13) has no such "
               "option")
    assert recipe_ep_overlap("qwen3235ba22b", "b200", "mxfp8", (26, 8), 8, 1, 8)[1].endswith(
        "this row has pp = 8 and none")
    assert recipe_ep_overlap("deepseekv3", "gb200", "mxfp8", (26, 8), 4, 4, 64)[1].endswith(
        "for the model, GPU and precision sets it")



def test_deepseek_v3_on_b200_overlaps_at_0_6_0s_layout_alone():
    """Megatron-Bridge 0.6.0 (the recipes read through NeMo 26.08: releases.
    PERF_RECIPES_060_THROUGH) runs DeepSeek-V3 on B200 in MXFP8 and NVFP4 at PP 8, VP 2, EP 32
    with the expert all-to-all overlap (deepseek/b200/deepseek_v3.py:147, 155, 190); 0.6.2 runs
    them at EP 8 without it, and both leave it off in BF16 and in 0.6.0's MXFP8 large-scale proxy
    (PP 16, EP 8: r064's layout). Synthetic rows off r064 (NeMo 26.04, B200, MXFP8): at 0.6.0's
    layout in 26.08 (and 26.06, by the reading's assumption) on, in MXFP8 and NVFP4; not after
    26.08, not at EP 8 or r064's own layout, not in BF16; a 26.04 row at the layout is read
    without it and says 0.6.0's recipe would set it."""
    from astral_dsl.runs.stacks import stack_of

    at = {"pp": "8", "vp": "2", "ep": "32"}
    v = {m: f"NeMo {m} container (Megatron-Bridge)" for m in ("26.06", "26.08", "26.10")}
    rows = [_row("r064", id="mxfp8", source_version=v["26.08"], **at),
            _row("r064", id="nvfp4", source_version=v["26.08"], precision="NVFP4", **at),
            _row("r064", id="26.06", source_version=v["26.06"], **at),
            _row("r064", id="later", source_version=v["26.10"], **at),
            _row("r064", id="ep8", source_version=v["26.08"], pp="8", vp="2", ep="8"),
            _row("r064", id="proxy", source_version=v["26.08"]),
            _row("r064", id="bf16", source_version=v["26.08"], precision="BF16", **at),
            _row("r064", id="old", **at)]
    t = parse_table(_csv(rows), "t.csv")
    stacks = {r.id: stack_of(r, True, 1, r.count("pp"), 256 // (r.count("pp") * 1))
              for r in t.runs}
    got = {i: dict(s.fields)["ep_overlap"] for i, s in stacks.items()}
    assert got == {"mxfp8": True, "nvfp4": True, "26.06": True, "later": False, "ep8": False,
                   "proxy": False, "bf16": False, "old": False}
    said = {i: next(a for a in s.assumed if "all-to-all" in a) for i, s in stacks.items()}
    assert said["mxfp8"] == (
        "expert all-to-all overlapped across micro-batches with delayed weight gradients, as "
        "Megatron-Bridge 0.6.0's performance recipe (perf_recipes/) for the model, GPU, "
        "precision and layout sets it")
    assert said["later"] == (
        "no expert all-to-all overlap (Megatron-Core's default), as Megatron-Bridge 0.6.2's "
        "performance recipe (perf_recipes/) for the model, GPU and precision leaves it")
    assert said["old"].endswith("leave it off; Megatron-Bridge 0.6.0's performance recipe "
                                "(perf_recipes/) for the model, GPU, precision and layout sets "
                                "it")

def test_nemo_26_06_rows_read_the_recipe_with_their_graphs():
    """NeMo 26.06 (Megatron-Bridge 0.5.0) is read with 0.6.0's performance recipe: the overlap
    comes in the one function that turns on the full-iteration CUDA graphs Seer reads from 26.06
    (releases.MOE_GRAPHS_FROM), and 26.06's rows ran as fast as 26.08's at one layout. r021
    (26.06) and r010 (26.06.01), DeepSeek-V3 on GB200 in MXFP8 at r001's layout, overlap as r001
    does and say it is an assumption; 26.04.01's r038 does not."""
    from astral_dsl.runs.releases import MOE_GRAPHS_FROM
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r021"), _row("r010"), _row("r038"), _row("r001")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, True, r.count("tp", 1), r.count("pp", 1), 4).fields)
           ["ep_overlap"] for r in t.runs}
    assert got == {"r021": True, "r010": True, "r038": False, "r001": True}
    on_26_06 = recipe_ep_overlap("deepseekv3", "gb200", "mxfp8", MOE_GRAPHS_FROM, 4, 4, 64)
    assert on_26_06[0] and "taken to hold from 26.06" in on_26_06[1]
    assert "taken to hold" not in recipe_ep_overlap("deepseekv3", "gb200", "mxfp8", (26, 8), 4,
                                                    4, 64)[1]
    off = recipe_ep_overlap("deepseekv3", "gb200", "mxfp8", (26, 4), 4, 4, 64)
    assert not off[0] and "0.2.0rc6 to 0.4.0" in off[1]
