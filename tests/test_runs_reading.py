"""How a runs table's cells are read (docs/runs.md, "The format" and "What a row is taken to
have run"): numbers with thousands separators only, the `recompute` words the format defines,
ids generated for rows without one, the column a diagnostic of a row's job is blamed on, and
the system, framework and fp8 recipe a row's text names (read exactly, or not expressible).
The reader on bad input and `astral runs` itself: tests/test_runs.py."""
from __future__ import annotations

import json

from astral_dsl.runs.evaluate import evaluate, prepare
from astral_dsl.runs.table import parse_table

from test_cli import call
from test_runs import LAB, _csv, _row, _write


def _problems(rows):
    return {r.id: r.problems for r in parse_table(_csv(rows), "t.csv").runs}


def _values(rows, column):
    return {r.id: dict(r.values)[column] for r in parse_table(_csv(rows), "t.csv").runs}


# ---- numbers ----------------------------------------------------------------------------------------------
def test_a_comma_is_a_thousands_separator_only_between_groups_of_three_digits():
    ok = [_row("r117", id="four", tokens_per_s_per_gpu="31,508"),
          _row("r117", id="seven", tokens_per_s_per_gpu="1,234,567.5"),
          _row("k22b_full", id="plain", step_time_s="1.42")]
    assert _values(ok, "tokens_per_s_per_gpu") == {"four": 31508.0, "seven": 1234567.5,
                                                   "plain": None}
    assert all(p == () for p in _problems(ok).values())
    # a decimal comma ("3,87" s, a German-locale spreadsheet's) was read as 387 s, a misplaced
    # separator ("1,6934") as 16934: both reject their row with the column and why
    bad = [_row("k22b_full", id="decimal", step_time_s="3,87"),
           _row("r117", id="misplaced", tokens_per_s_per_gpu="1,6934"),
           _row("r117", id="trailing", tokens_per_s_per_gpu="31508,"),
           _row("k22b_full", id="count", gbs="1,28")]
    why = "a comma is read only between groups of three digits (4,912); write a decimal point " \
          "as `.`"
    assert _problems(bad) == {
        "decimal": (("step_time_s", f"`3,87`: {why}"),),
        "misplaced": (("tokens_per_s_per_gpu", f"`1,6934`: {why}"),),
        "trailing": (("tokens_per_s_per_gpu", f"`31508,`: {why}"),),
        "count": (("gbs", f"`1,28`: {why}"),)}
    t = parse_table(_csv(bad), "t.csv")
    assert [(p.status, p.field) for p in prepare(t)] == [
        ("rejected", "step_time_s"), ("rejected", "tokens_per_s_per_gpu"),
        ("rejected", "tokens_per_s_per_gpu"), ("rejected", "gbs")]


def test_a_count_outside_its_range_is_said_with_its_digits():
    """`vocab: 1.07374e+09` was the bound said for 2^30, `hidden: 1.67772e+07` for 2^24."""
    rows = [_row("k22b_full", id="vocab", vocab="1e23"),
            _row("k22b_full", id="hidden", hidden="20,000,000"),
            _row("k22b_full", id="fsdp", fsdp="-2")]
    assert _problems(rows) == {"vocab": (("vocab", "1e+23 is outside 1 - 1,073,741,824"),),
                               "hidden": (("hidden", "20,000,000 is outside 1 - 16,777,216"),),
                               "fsdp": (("fsdp", "-2 is outside 0 - 1,000,000,000"),)}


def test_a_rows_tokens_per_s_and_step_time_must_be_one_measurement():
    # r117: 128 x 8,192 tokens a step on 8 GPUs in 4.16 s = 31,507.7 tokens/s per GPU, as it
    # publishes (31,508). A step rounded to 4.2 s (31,207.6: 1 % off) is read; "3,87" written
    # unquoted where tokens/s go moves the cells: tokens/s 3, step 87 s, which cannot both hold
    # (128 x 8,192 / (87 x 8) = 1,506.6 tokens/s per GPU) and were scored against the 3 alone
    rows = [_row("r117", id="rounded", tokens_per_s_per_gpu="31508", step_time_s="4.2"),
            _row("r117", id="shifted", tokens_per_s_per_gpu="3", step_time_s="87")]
    assert _problems(rows) == {"rounded": (), "shifted": (("tokens_per_s_per_gpu", (
        "3 tokens/s per GPU disagrees with the row's step time: 128 x 8,192 tokens / (87 s x "
        "8 GPUs) = 1,507 tokens/s per GPU")),)}
    t = parse_table(_csv(rows), "t.csv")
    (e,) = t.rejected
    assert e.code == "E777" and e.message.startswith("row `shifted` is rejected: "
                                                     "tokens_per_s_per_gpu: 3 tokens/s per GPU")
    line = _csv(rows).split("\n")[2]
    start = e.span.start.column
    assert e.span.start.line == 3 and line[start - 1:e.span.end.column - 1] == "3"
    assert e.hint.startswith("one of the two is wrong: check both cells against the source")
    assert [(p.row.id, p.status) for p in prepare(t)][1] == ("shifted", "rejected")


# ---- recompute --------------------------------------------------------------------------------------------
def test_recompute_is_full_selective_none_or_empty_and_anything_else_rejects_the_row():
    words = {"full": "full", "sel": "Selective (per-op)", "none": "None ", "empty": ""}
    rows = [_row("k22b_full", id=k, recompute=v) for k, v in words.items()]
    t = parse_table(_csv(rows), "t.csv")
    assert all(r.problems == () for r in t.runs)
    specs = {p.row.id: p.spec for p in prepare(t)}
    # empty: Seer's rule chooses (k22b_full on 8 A100s fits without recomputation)
    assert {k: s.recompute for k, s in specs.items() if k != "empty"} == {
        "full": "full", "sel": "selective", "none": "none"}
    # "false" and "partial" were Seer's rule, "non-full" was read as full
    odd = ["false", "partial", "non-full", "no", "off", "fulll"]
    rows = [_row("k22b_full", id=w, recompute=w) for w in odd]
    t = parse_table(_csv(rows), "t.csv")
    assert {r.id: r.problems for r in t.runs} == {
        w: (("recompute", f"`{w}` is not full, selective or none"),) for w in odd}
    assert {(p.status, p.field) for p in prepare(t)} == {("rejected", "recompute")}


# ---- ids --------------------------------------------------------------------------------------------------
def test_a_generated_id_never_takes_an_explicit_one():
    # line 2: no id; line 3: "line 3"; line 4: "line 2" (genid.csv of the audit): the explicit
    # "line 2" was reported as "also the id of line 2", the row without an id
    rows = [_row("k22b_full", id=""), _row("k22b_full", id="line 3"),
            _row("k22b_full", id="line 2"), _row("k22b_full", id="")]
    t = parse_table(_csv(rows), "t.csv")
    assert [(r.line, r.id, r.problems) for r in t.runs] == [
        (2, "line 2 (no id)", ()), (3, "line 3", ()), (4, "line 2", ()), (5, "line 5", ())]
    # two explicit ids alike are still one row too many
    t = parse_table(_csv([_row("k22b_full", id="line 3"), _row("k22b_full", id="line 3")]),
                    "t.csv")
    assert t.runs[1].problems == (("id", "`line 3` is also the id of line 2"),)


# ---- the column behind a diagnostic -----------------------------------------------------------------------
def test_virtual_stages_without_a_pipeline_blame_the_vp_column():
    # E760 points at `schedule = interleaved`, which the row's `vp` sets: it blamed `layout`,
    # which is not a column
    t = parse_table(_csv([_row("r117", id="vp_pp1", pp="1", vp="4", gpus="8")]), "t.csv")
    (p,) = prepare(t)
    assert p.status == "not_expressible" and p.field == "vp", (p.field, p.reason)
    assert p.reason.startswith("E760: ") and "pp = 1" in p.reason


def test_experts_and_experts_per_token_are_given_together_or_lent_by_the_stdlib():
    """k22b_sel (GPT-22B, dense, its architecture in the row) given 8 experts and no moe_topk
    was forecast with top_k 1 unsaid (the language's default) at +584 % and fitted on; given a
    moe_topk and no experts, the moe_topk was dropped unsaid. A stdlib MoE model named without
    its architecture lends its own (r001: DeepSeek-V3's 8 of 256)."""
    rows = [_row("k22b_sel", id="experts", moe_experts="8"),
            _row("k22b_sel", id="topk", moe_topk="2"),
            _row("k22b_sel", id="both", moe_experts="8", moe_topk="2"),
            _row("k22b_sel", id="dense")]
    got = {p.row.id: (p.status, p.field, p.reason) for p in prepare(parse_table(_csv(rows),
                                                                                "t.csv"))}
    assert got["experts"] == ("not_expressible", "moe_topk", (
        "the row gives 8 experts (moe_experts) but not how many each token is routed to "
        "(`moe_topk`): give it"))
    assert got["topk"] == ("not_expressible", "moe_topk", (
        "moe_topk = 2 but the model has no experts (no `moe_experts`, nor stdlib.models "
        "GPT_22B): give both, or neither for a dense model"))
    assert got["both"][0] == got["dense"][0] == "ok"
    (p,) = prepare(parse_table(_csv([_row("r001", id="named", layers="", hidden="", heads="",
                                          kv_heads="", ffn_hidden="", moe_topk="")]), "t.csv"))
    assert p.status == "ok", (p.field, p.reason)


def test_a_sharding_group_must_divide_the_ranks_it_shards():
    # r212 (NeMo AutoModel, FSDP2): 64 GPUs, cp 2, its fsdp 32 the DP ranks. A group of
    # 1,000,000 (or 3) GPUs was read as `on` and forecast as the row's own; 64 = DP x CP is
    # torchtitan's dp_shard x cp mesh, a group of its own
    rows = [_row("r212", id=f"f{n}", fsdp=str(n)) for n in (1_000_000, 3, 128, 64, 32, 1, 0)]
    by = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    for n in (1_000_000, 3, 128):
        assert by[f"f{n}"].status == "not_expressible" and by[f"f{n}"].field == "fsdp"
        assert by[f"f{n}"].reason == (f"a sharding group of {n:,} GPUs does not divide the 64 "
                                      f"data- and context-parallel ranks it shards (64 GPUs / "
                                      f"(tp x pp = 1))")
    assert all(by[f"f{n}"].status != "not_expressible" for n in (64, 32, 1, 0))


# ---- the system a row ran on (runs/parts.py) -------------------------------------------------------------
SYSTEM_CELLS = [
    # (system, gpu) -> the stdlib system, or (the column blamed, words of why)
    (("DGX-H100", "H100-SXM5-80GB"), "DGX-H100"),
    (("torchtitan benchmark", "H100-SXM-96GB-HBM2e (500W, Grand Teton)"), "GrandTeton-H100-500W"),
    (("", "H100 (500W)"), "GrandTeton-H100-500W"),
    (("Grand Teton", "H100"), "GrandTeton-H100-500W"),
    (("Selene (DGX A100 SuperPOD)", "A100-SXM4-80GB"), "DGX-A100"),
    (("GB200 NVL72", "GB200"), "DGX-GB200"),
    (("DGXB200", ""), "DGX-B200"),
    (("", "H100 SXM 700W"), "DGX-H100"),
    (("torchtitan benchmark", "H200"), "DGX-H200"),
    # "b200" in the system cell won over the H100 gpu cell (+82 % on DGX-B200)
    (("B200-upgrade-waitlist cluster", "H100-SXM5-80GB"), ("system", "names B200 and gpu")),
    # the PCIe and NVL cards were forecast as the SXM parts
    (("our PCIe boxes", "H100-PCIe-80GB"), ("gpu", "is the H100 PCIe card")),
    (("", "H100 NVL 94GB"), ("gpu", "is the H100 NVL card")),
    (("", "A100-PCIe-40GB"), ("gpu", "is the A100 PCIe card")),
    (("", "A100-SXM4-40GB"), ("gpu", "states 40 GB: the stdlib's A100 of DGX-A100 has 80 GB")),
    (("", "B200 (1200W)"), ("gpu", "states 1200 W: the stdlib's B200 of DGX-B200 has 1000 W")),
    (("", "H100/H200"), ("gpu", "names several GPUs (H100, H200)")),
    (("DGX-B300", "B300"), ("gpu", "B300 / GB300")),
    (("", "B2000"), ("gpu", "no stdlib system matches")),
]


def test_a_row_runs_on_the_part_its_cells_name_or_is_not_expressible():
    from astral_dsl.runs.parts import system_of

    for (system, gpu), want in SYSTEM_CELLS:
        found, field, why = system_of(system, gpu)
        if isinstance(want, str):
            assert found is not None and found.key == want, (system, gpu, why)
        else:
            assert found is None and field == want[0] and want[1] in why, (system, gpu, why)


def test_the_framework_is_the_source_versions_and_fp8_delayed_is_delayed():
    from astral_dsl.runs.stacks import framework_of, precision_of

    rows = [_row("r171", notes="2x faster than our torchtitan baseline"),
            _row("r171", id="titan", source_version="torchtitan 0.2.0, measured 2025-09"),
            _row("r209"), _row("r213")]
    t = parse_table(_csv(rows), "t.csv")
    assert [framework_of(r) for r in t.runs] == ["megatron", "torchtitan", "automodel",
                                                 "torchtitan"]
    assert precision_of("FP8 delayed scaling (TE default)", "H100-SXM5-80GB")[0] == \
        ("fp8", "delayed")
    assert precision_of("FP8-CS", "H100-SXM5-80GB")[0] == ("fp8", "current")



def test_nemo_24_fp8_is_delayed_scaling():
    """An unlabelled FP8 of a NeMo release before 25.04 is Transformer Engine 1.x's delayed
    scaling (runs/precision.py, CURRENT_SCALING_FROM); from 25.04, and outside NeMo, current
    scaling, the tables' FP8 / FP8-CS."""
    from astral_dsl.runs.stacks import precision_of

    h100 = "H100-SXM5-80GB"
    assert precision_of("FP8", h100, (24, 7))[0] == ("fp8", "delayed")
    assert precision_of("FP8", h100, (24, 3))[0] == ("fp8", "delayed")
    assert precision_of("FP8", h100, (25, 4))[0] == ("fp8", "current")
    assert precision_of("FP8", h100)[0] == ("fp8", "current")
    assert precision_of("FP8 alt granularity", h100, (24, 7))[0] == ("fp8", "blockwise")
    rows = [_row("r176"), _row("r196"), _row("r117")]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert [prepared[i].spec.fp8_recipe for i in ("r176", "r196", "r117")] == \
        ["delayed", "delayed", "current"]

LAB2 = """
import stdlib.systems { DGX_H100_Rack, NDR_Fabric }
block East_SU { racks = 8 x DGX_H100_Rack }
block West_SU { racks = 2 x DGX_H100_Rack }
fabric East_Fabric = NDR_Fabric
fabric West_Fabric = NDR_Fabric
"""


def test_a_gpu_file_takes_only_the_rows_that_name_its_blocks_or_their_gpu(tmp_path, capsys):
    """A published row naming a stdlib system (DGX-H100) or another part (Grand Teton's 96 GB
    500 W H100) keeps its stdlib system: with two H100 blocks the DGX-H100 row was "not
    expressible: gpu matches the blocks", with one the torchtitan rows ran on it (+22 %)."""

    rows = [_row("r020"), _row("r213"), _row("r020", id="ours", system="", gpu="H100")]
    path = _write(tmp_path, rows)
    for name, text, ours in (("lab.astral", LAB, "Lab_SU"), ("two.astral", LAB2, None)):
        gpu_file = tmp_path / name
        gpu_file.write_text(text, encoding="utf-8")
        code, out, _ = call(["runs", str(path), "--gpu-file", str(gpu_file), "--format",
                             "json"], capsys)
        by = {r["id"]: r for r in json.loads(out)["rows"]}
        assert code == 0
        assert by["r020"]["status"] == "ok" and by["r020"]["system"] == "DGX-H100"
        assert by["r213"]["status"] == "ok" and by["r213"]["system"] == "GrandTeton-H100-500W"
        if ours:
            assert by["ours"]["system"] == ours
        else:
            assert by["ours"]["field"] == "system" and \
                "matches the blocks East_SU, West_SU" in by["ours"]["reason"]


# ---- model TFLOP/s ----------------------------------------------------------------------------------------
def test_automodel_rows_are_scored_on_tflops_with_attention_counted_causal():
    """r209 (AutoModel, Qwen3 30B on 8 H100s) scored on its TFLOP/s was +13.0 % against -6.9 % on
    its tokens/s: its attention was counted in full. Counted causal, Seer's FLOPs per token are
    3 x (lin 5.461 + logits 0.622 + attention 3.221 / 2) = 23.082 GFLOP (the parts, from
    seer.forecast.layer_flops_per_token) against the published 277e12 / 12,040 = 23.007: the
    TFLOP/s error is (1 + the tokens/s error) x 23.082 / 23.007 - 1."""
    rows = [_row("r209"), _row("r209", id="tflops", tokens_per_s_per_gpu="", step_time_s="")]
    t = parse_table(_csv(rows), "t.csv")
    tok, tflops = evaluate(prepare(t))
    assert tok.metric == "tokens_per_s_per_gpu" and tflops.metric == "model_tflops_per_gpu"
    ratio = 23.082 / (277e12 / 12040 / 1e9)
    assert abs((1 + tflops.error) - (1 + tok.error) * ratio) < 1e-3, (tok.error, tflops.error)


def test_deepseek_v3_on_gb200_runs_on_16_trays_of_each_rack_from_nemo_25_09():
    """Megatron-Bridge 0.6.0's and 0.6.2's GB200 DeepSeek-V3 recipes (EP 64) set HybridEP's
    NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = 64: 64 GPUs of each 72-GPU rack, 16 of its 18
    trays of 4 (runs/stacks.HYBRID_EP_DOMAIN); the token-drop variant too (same recipe, the
    alltoall dispatcher). Not GPT-OSS 120B's, not H100's, not another EP degree, not before
    NeMo 25.09; a scalable unit of 8 racks then holds 8 x 64 = 512 of the job's GPUs. A row
    names the release it is read with: 0.6.0 through NeMo 26.08 (r001), 0.6.2 after."""
    from astral_dsl.runs.stacks import stack_of, su_gpus
    from astral_dsl.runs.system_spec import SYSTEMS

    rows = [_row("r001"), _row("r146"), _row("r121"), _row("r003"), _row("r001", id="ep32",
            ep="32"), _row("r001", id="h100", system="DGX-H100", gpu="H100-SXM5-80GB"),
            _row("r001", id="old", source_version="NeMo 25.07 container")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, True, 1, 4, 64).fields).get("hosts_per_rack") for r in t.runs}
    # "old": no HybridEP before NeMo 25.09, but NeMo 2.x's own launch (--segment 16: below)
    assert got == {"r001": 16, "r146": 16, "r121": 16, "r003": None, "ep32": None,
                   "h100": None, "old": 16}
    assert su_gpus(SYSTEMS["DGX-GB200"], 16) == 512 and su_gpus(SYSTEMS["DGX-GB200"], None) == 576
    later = _row("r001", id="later", source_version="NeMo 26.10 container (Megatron-Bridge)")
    said = {r.id: [a for a in stack_of(r, True, 1, 4, 64).assumed if "trays of each" in a]
            for r in parse_table(_csv([_row("r001"), later]), "t.csv").runs}
    tail = "the recipe's HybridEP topology puts its EP group in one NVLink domain " \
        "(Megatron-Bridge {}, NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = 64)"
    assert said == {"r001": ["16 trays of each NVL72 rack, 64 GPUs: " + tail.format("0.6.0")],
                    "later": ["16 trays of each NVL72 rack, 64 GPUs: " + tail.format("0.6.2")]}


def test_deepseek_v3_on_gb200_in_fp8_recomputes_its_recipes_dense_mlps():
    """Megatron-Bridge 0.6.2's (and 0.6.0's) GB200 DeepSeek-V3 recipes at TP 1, PP 4, EP 64,
    micro-batch 1 recompute `mlp` in FP8 current scaling and NVFP4 (deepseek/gb200/
    deepseek_v3.py, the fp8cs and nvfp4 configs), `mla_up_proj` in BF16 and MXFP8: NeMo 25.09's
    FP8 token-drop row (r146) and an NVFP4 variant take `mlp` (runs/recompute_recipe.py);
    another EP degree, a stated recomputation or a release before 25.09 stays with the rule."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r146"), _row("r146", id="nvfp4", precision="NVFP4"),
            _row("r146", id="bf16", precision="BF16"), _row("r146", id="ep32", ep="32"),
            _row("r146", id="stated", recompute="full"),
            _row("r146", id="old", source_version="NeMo 25.07 container")]
    t = parse_table(_csv(rows), "t.csv")
    fields = {r.id: dict(stack_of(r, True, 1, 4, 64).fields) for r in t.runs}
    got = {i: (f.get("recompute"), f.get("recompute_modules")) for i, f in fields.items()}
    assert got == {"r146": ("modules", ("mlp",)), "nvfp4": ("modules", ("mlp",)),
                   "bf16": ("modules", ("mla_up_proj",)), "ep32": (None, None),
                   "stated": (None, None), "old": (None, None)}
    row = next(r for r in t.runs if r.id == "r146")
    assert "recompute_modules = [mlp] (Megatron-Bridge 0.6.0's performance recipe for the " \
        "model and GPU)" in stack_of(row, True, 1, 4, 64).assumed


def test_deepseek_v3_on_b200_recomputes_as_the_recipes_of_its_release_read():
    """Megatron-Bridge 0.6.0 (NeMo 26.08's by the wheels' dates, and the earliest recipes for the
    releases before: releases.PERF_RECIPES_060_THROUGH) runs DeepSeek-V3 on 256 B200s in BF16
    and FP8 current scaling at PP 16, EP 8 with `mla_up_proj` recomputed, in MXFP8 at PP 8, VP 2,
    EP 32 with `mla_up_proj` and `mlp`; 0.6.2 runs BF16, FP8 and MXFP8 at PP 8, EP 8 with
    `mla_up_proj` alone (perf_recipes/deepseek/b200/deepseek_v3.py). NeMo 25.09's FP8 token-drop
    row (r156, PP 16, EP 8) takes 0.6.0's `mla_up_proj`; the same row after NeMo 26.08 is read
    with 0.6.2's, which has no recipe at its layout; an MXFP8 row at PP 8, EP 32 takes 0.6.0's
    `mla_up_proj` and `mlp`, at PP 8, EP 8 0.6.2's `mla_up_proj` only after 26.08; the MXFP8
    large-scale proxy's layout (PP 16, EP 8: r064) is alike in both."""
    from astral_dsl.runs.stacks import stack_of

    later = "NeMo 26.10 container (Megatron-Bridge)"
    rows = [_row("r156"), _row("r156", id="later", source_version=later),
            _row("r064"), _row("r064", id="r064later", source_version=later),
            _row("r064", id="ep32", pp="8", vp="2", ep="32"),
            _row("r064", id="ep32later", pp="8", vp="2", ep="32", source_version=later),
            _row("r064", id="pp8", pp="8", vp="2", ep="8"),
            _row("r064", id="pp8later", pp="8", vp="2", ep="8", source_version=later)]
    t = parse_table(_csv(rows), "t.csv")
    fields = {r.id: dict(stack_of(r, True, 1, r.count("pp"), 16).fields) for r in t.runs}
    got = {i: f.get("recompute_modules") for i, f in fields.items()}
    assert got == {"r156": ("mla_up_proj",), "later": None,
                   "r064": ("mla_up_proj",), "r064later": ("mla_up_proj",),
                   "ep32": ("mla_up_proj", "mlp"), "ep32later": None,
                   "pp8": None, "pp8later": ("mla_up_proj",)}
    said = {r.id: [a for a in stack_of(r, True, 1, r.count("pp"), 16).assumed
                   if a.startswith("recompute_modules")] for r in t.runs}
    assert said["r156"] == ["recompute_modules = [mla_up_proj] (Megatron-Bridge 0.6.0's "
                            "performance recipe for the model and GPU)"]
    assert said["pp8later"] == ["recompute_modules = [mla_up_proj] (Megatron-Bridge 0.6.2's "
                                "performance recipe for the model and GPU)"]


def test_nemo2_gb200_rows_beyond_a_rack_run_on_their_slurm_segment():
    """NeMo 2.x's performance scripts submit a GB200 job of more than 18 trays with Slurm's
    `--segment` set to the largest divisor of its trays up to 18 (nemo_toolkit 2.3.0 scripts/
    performance/utils.py:97-103, 2.4.0 executors.py:103-109): GPT-3 175B (NeMo 25.04) and Llama
    3.1 405B (25.07) on 128 GB200s, 32 trays, run 16 a rack; 45 trays (180 GPUs) 15 a rack; not
    a job of one rack, not H100, not Megatron-Bridge's releases (NeMo 25.09 on)."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r179"), _row("r190"), _row("r188"), _row("r144"),
            _row("r179", id="odd", gpus="180", gbs="360"),
            _row("r179", id="h100", system="DGX-H100", gpu="H100-SXM5-80GB")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, False, 4, 4, 8).fields).get("hosts_per_rack") for r in t.runs}
    assert got == {"r179": 16, "r190": 16, "r188": None, "r144": None, "odd": 15, "h100": None}
    row = next(r for r in t.runs if r.id == "r179")
    assert any("--segment 16" in a for a in stack_of(row, False, 4, 4, 8).assumed)


def test_deepseek_v3_dispatches_with_hybridep_on_every_gpu_from_nemo_26_02():
    """Megatron-Bridge's DeepSeek-V3 recipes (0.3.1 on) ask for HybridEP, which
    apply_flex_dispatcher_backend keeps on Hopper and B200 too (stacks.HYBRID_EP_MODELS), from
    NeMo 26.02 (Megatron-Core 0.16, the first with HybridEP: releases.HYBRIDEP_FROM); NeMo
    25.09's H100 row (r164) runs DeepEP; GPT-OSS's H100 row keeps the alltoall dispatcher (its
    recipes': runs/moe_recipe.py), the token-drop variant the alltoall dispatcher, a row before
    NeMo 25.09 the alltoall dispatcher."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r164"), _row("r064"), _row("r156"), _row("r137"), _row("r001"),
            _row("r164", id="old", source_version="NeMo 25.07 container")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, True, 1, 4, 8).fields).get("moe_dispatcher") for r in t.runs}
    assert got == {"r164": "deepep", "r064": "hybridep", "r156": None, "r137": None,
                   "r001": "hybridep", "old": None}


def test_a_dropless_blackwell_row_before_nemo_26_02_dispatches_with_alltoall():
    """NeMo 25.09's and 25.11's code has no HybridEP (Megatron-Core < 0.16) and runs DeepEP on
    Ampere and Hopper only (Megatron-Bridge 0.2.0rc6 training/deepep.py): NeMo 25.11's
    DeepSeek-V3 on GB200 (r121) dispatches with the provider's alltoall dispatcher and says
    why; the same row on B200 too, from NeMo 26.02 HybridEP; on H100 DeepEP."""
    from astral_dsl.runs.moe_recipe import before_flex_on_blackwell
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r121"), _row("r121", id="b200", system="DGX-B200", gpu="B200"),
            _row("r121", id="new", source_version="NeMo 26.02 container (Megatron-Bridge)"),
            _row("r121", id="h100", system="DGX-H100", gpu="H100-SXM5-80GB")]
    t = parse_table(_csv(rows), "t.csv")
    stacks = {r.id: stack_of(r, True, 1, 4, 4) for r in t.runs}
    got = {k: dict(s.fields).get("moe_dispatcher") for k, s in stacks.items()}
    assert got == {"r121": None, "b200": None, "new": "hybridep", "h100": "deepep"}
    said = [a for a in stacks["r121"].assumed if "no HybridEP" in a]
    assert len(said) == 1 and "DeepEP on Ampere and Hopper only" in said[0]
    assert not any("flex token dispatcher" in a for a in stacks["r121"].assumed)
    assert before_flex_on_blackwell("gb200", (26, 2)) is None
    assert before_flex_on_blackwell("h100sxm580gb", (25, 11)) is None
    assert before_flex_on_blackwell("b200", None) is None


def test_gpt_oss_keeps_the_alltoall_dispatcher_but_in_mxfp8_on_gb200():
    """Megatron-Bridge's GPT-OSS provider and recipes set the alltoall dispatcher (0.3.0
    gpt_oss_provider.py:72, 0.6.2 recipes/gpt_oss/h100/gpt_oss.py:204, never applying its
    "deepep" backend), and only 0.6.0's and 0.6.2's GB200 MXFP8 performance recipe switches to
    HybridEP (perf_recipes/gpt_oss/common.py): runs/moe_recipe.py. GPT-OSS 120B in BF16 on
    B200 (r131, EP 8; r109, EP 64) and GB200 (r040) and on H100 (r137) reads no dispatcher
    (alltoall, said in its assumptions); in MXFP8 on GB200 (r003) HybridEP; a B200 MXFP8 row (the recipe's
    gpt_oss_120b_pretrain_64gpu_b200_fp8mx_config) alltoall; DeepSeek-V3 on B200 in BF16 still
    HybridEP (its recipe's)."""
    from astral_dsl.runs.moe_recipe import recipe_alltoall
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r131"), _row("r109"), _row("r040"), _row("r137"), _row("r003"),
            _row("r003", id="b200mx", system="DGX-B200", gpu="B200"),
            _row("r001", id="dsv3b200", system="DGX-B200", gpu="B200", precision="BF16")]
    t = parse_table(_csv(rows), "t.csv")
    stacks = {r.id: stack_of(r, True, 1, 1, 8) for r in t.runs}
    got = {k: dict(s.fields).get("moe_dispatcher") for k, s in stacks.items()}
    assert got == {"r131": None, "r109": None, "r040": None, "r137": None, "r003": "hybridep",
                   "b200mx": None, "dsv3b200": "hybridep"}
    said = [a for a in stacks["r131"].assumed if "alltoall token dispatcher" in a]
    assert said == ["Megatron-Core's alltoall token dispatcher (NCCL all-to-all): the model's "
                    "Megatron-Bridge provider and recipes keep it (0.3.0 gpt_oss_provider.py; "
                    "0.6.0 and 0.6.2 performance recipes, HybridEP on GB200 in MXFP8 only: "
                    "runs/moe_recipe.py)"]
    assert not any("flex token dispatcher" in a for a in stacks["r131"].assumed)
    assert recipe_alltoall("gptoss120b", "gb200", "mxfp8") is None
    assert recipe_alltoall("gptoss120b", "gb200", "bf16") is not None
    assert recipe_alltoall("deepseekv3", "b200", "bf16") is None


def test_qwen3_30b_a3b_on_8_b200s_dispatches_with_hybridep_as_its_performance_recipe():
    """Megatron-Bridge 0.6.2's Qwen3 30B-A3B recipes for 8 B200s (perf_recipes/qwen/b200/
    qwen3_moe.py:198, 252, 306; TP 1, PP 1, EP 8) set HybridEP in every precision
    (runs/moe_recipe.py, HYBRID_EP_RECIPES): the B200 rows of that layout, at four sequences a
    micro-batch (r044) or one (r112), read HybridEP as their GB200 twins (r043) do; Qwen3
    235B-A22B on B200 (r047, PP 8) keeps DeepEP, and so does the 30B at another layout."""
    from astral_dsl.runs.moe_recipe import recipe_hybridep
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r044"), _row("r112"), _row("r043"), _row("r047")]
    t = parse_table(_csv(rows), "t.csv")
    layout = {"r044": (1, 1), "r112": (1, 1), "r043": (1, 1), "r047": (1, 8)}
    got = {r.id: dict(stack_of(r, True, *layout[r.id], 8).fields).get("moe_dispatcher")
           for r in t.runs}
    assert got == {"r044": "hybridep", "r112": "hybridep", "r043": "hybridep",
                   "r047": "deepep"}
    assert recipe_hybridep("qwen330ba3b", "b200", "bf16", (1, 1, 8))
    assert not recipe_hybridep("qwen330ba3b", "b200", "mxfp8", (1, 1, 16))
    assert not recipe_hybridep("qwen330ba3b", "h100", "fp8", (1, 1, 8))
    assert not recipe_hybridep("qwen3235ba22b", "b200", "mxfp8", (1, 8, 8))


def test_nemo2_moe_performance_recipes_drop_tokens_padded_to_capacity():
    """NeMo 25.04 and 25.07's MoE performance scripts run their recipes in performance mode,
    which adds MegatronTokenDropCallback (capacity factor 1, inputs padded: nemo_toolkit 2.3.0 /
    2.4.0 recipes/mixtral_8x7b.py:226, llama4_e16.py:241; Qwen3's scripts from 2.4.0):
    runs/moe_recipe.py. Mixtral (r185, 25.04) and Llama 4 Scout (r193, 25.07) are read so; the
    same models in Megatron-Bridge's 25.09 container are not unless labelled (r166's label; on
    GB200 that container's dropless rows keep the alltoall dispatcher: no HybridEP before
    Megatron-Core 0.16, runs/releases.py HYBRIDEP_FROM); Qwen3 only from 25.07; DeepSeek-V3 of 25.07 not (its script drops tokens on Blackwell only,
    not read). Mixtral's experts of NeMo 2.x run as SequentialMLP (`grouped_gemm = false`)."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r185"), _row("r193"), _row("r166"),
            _row("r185", id="bridge", source_version="NeMo 25.09 container (Megatron-Bridge)"),
            _row("r166", id="qwen_2504", model="Qwen3_235B_a22B",
                 source_version="NeMo 25.04 container (NeMo Framework docs)"),
            _row("r166", id="qwen_2507", model="Qwen3_235B_a22B",
                 source_version="NeMo 25.07 container (NeMo Framework docs)"),
            _row("r001", id="dsv3_2507", source_version="NeMo 25.07 container")]
    t = parse_table(_csv(rows), "t.csv")
    got = {}
    for r in t.runs:
        f = dict(stack_of(r, True, 1, 1, 8).fields)
        got[r.id] = (f.get("capacity_factor"), f.get("pad_to_capacity"),
                     f.get("moe_dispatcher"), f.get("grouped_gemm"))
    padded, none = (1.0, True, None, None), (None, None, None, None)
    # NeMo 2.x's Mixtral runs its experts as SequentialMLP (moe_grouped_gemm left off)
    assert got == {"r185": (1.0, True, None, False), "r193": padded, "r166": padded,
                   "bridge": none, "qwen_2504": none,
                   "qwen_2507": padded, "dsv3_2507": none}


def test_padded_token_drop_removes_the_forward_token_count_pause():
    """Padded to capacity, Megatron-Core's alltoall dispatcher sets no host synchronisation
    point (0.12.0 token_dispatcher.py: drop_and_pad keeps cuda_sync_point = "no_sync"): r185
    (Mixtral 8x7B, 32 MoE layers, 2 micro-batches a rank, no pipeline) loses exactly its
    forwards' pauses, 2 x 32 x moe_sync_s (the backward has none, padded or not); Mixtral's 8 experts at
    capacity factor 1 take ceil(8,192 x 2 / 8) x 8 = 16,384 copies, as dropless. Compared with
    the parameter gather after the step (without `overlap_param_gather`): overlapped, the
    dropless job's host keeps pace with its compute, so its gather is chained one bucket ahead
    (param_gather._chain) where the padded job's host runs ahead and gathers back to back, and the
    difference is more than the pauses."""
    from astral_dsl.runs.evaluate import prepare_row
    from astral_dsl.seer.forecast import run
    from astral_dsl.seer.calibration import shipped

    row = next(r for r in parse_table(_csv([_row("r185")]), "t.csv").runs)
    p = prepare_row(row)
    assert p.spec.capacity_factor == 1.0 and p.spec.pad_to_capacity and not p.spec.host_counts
    assert p.spec.routed(8192) == 16384
    plain = p.spec.with_(capacity_factor=None, pad_to_capacity=False)
    cal = shipped()
    assert p.spec.overlap_param_gather
    expected = 2 * 32 * cal.moe_sync_s
    padded_t = run(p.spec.with_(overlap_param_gather=False), p.gpu, p.net).iteration_time
    plain_t = run(plain.with_(overlap_param_gather=False), p.gpu, p.net).iteration_time
    assert abs((plain_t - padded_t) - expected) < 1e-6 * plain_t, (plain_t - padded_t, expected)
    overlapped = run(plain, p.gpu, p.net).iteration_time - run(p.spec, p.gpu, p.net).iteration_time
    assert overlapped > expected + 1e-6 * plain_t


def test_a_number_is_written_with_the_digits_0_to_9():
    # float() reads any script's digits and `_`: `1.٤2` s was a step of 1.42 s, `８` GPUs 8
    why = "is not a number: write it with the digits 0-9 (a point, an exponent, thousands " \
          "separated by commas)"
    rows = [_row("k22b_full", id="arabic", step_time_s="1.\u06642"),
            _row("k22b_full", id="wide", gpus="\uff18"),
            _row("k22b_full", id="under", gbs="1_0"),
            _row("r117", id="grouped", tokens_per_s_per_gpu="\u0663\u0661,508")]
    assert _problems(rows) == {
        "arabic": (("step_time_s", f"`1.\u06642` {why}"),),
        "wide": (("gpus", f"`\uff18` {why}"),),
        "under": (("gbs", f"`1_0` {why}"),),
        "grouped": (("tokens_per_s_per_gpu", f"`\u0663\u0661,508` {why}"),)}


def test_an_fsdp_row_says_fsdp_not_the_distributed_optimizer():
    """A row with `fsdp` runs Megatron-Core's FSDP (par.fsdp), and its assumptions say so: not
    the distributed optimizer the rows without it are read with (NeMo 25.07's Llama 3.1 405B on
    128 GB200s, r190, against its Llama 3 70B with TP 2, PP 4, r189)."""
    from astral_dsl.runs.stacks import stack_of

    t = parse_table(_csv([_row("r190"), _row("r189")]), "t.csv")
    said = {r.id: stack_of(r, False, 2, 1, 64).assumed for r in t.runs}
    assert any(a.startswith("Megatron-Core's FSDP") for a in said["r190"])
    assert not any("distributed optimizer" in a for a in said["r190"])
    assert any(a.startswith("the distributed optimizer") for a in said["r189"])
    assert dict(stack_of(t.runs[0], False, 2, 1, 64).parallel)["fsdp"] is True


def test_a_megatron_pipeline_overlaps_its_sends_only_when_interleaved():
    """Megatron-Bridge 0.3.1 training/comm_overlap.py (lines 450-457): with PP > 1 an interleaved
    pipeline (virtual stages > 1) sets overlap_p2p_comm, a 1f1b one batch_p2p_comm without
    overlap. NeMo 25.11's GPT-OSS 120B on H100 (r137: PP 4, VP 1) is read without `pp_overlap`
    (which W751 would call inert there), its Llama 3 70B (r135: PP 8, VP 5) with it, and so is a
    pipeline whose VP is not published (n/a) but whose notes do not say interleaved."""
    from astral_dsl.runs.stacks import stack_of

    rows = [_row("r137"), _row("r135"), _row("r137", id="na", vp="n/a"),
            _row("r137", id="pp1", pp="1")]
    t = parse_table(_csv(rows), "t.csv")
    got = {r.id: dict(stack_of(r, r.id != "r135", 1, r.count("pp"), 16).fields)["pp_overlap"]
           for r in t.runs}
    assert got == {"r137": False, "r135": True, "na": False, "pp1": False}
