"""runs/uses.py's uses() held to the numbers: the fit's Jacobian re-forecasts, for each constant,
only the rows uses() lists, so a row it leaves out never pulls on that constant (stop 54:
`attention = flash2` rows priced by attn_eff_sdpa but listed under attn_eff; stop 55: every
job's cross-entropy priced by softmax_eff but listed for the unfused rows alone). uses.unlisted
moves each constant halfway to each of its bounds and reports a row that moves unlisted.

The default suite checks one row per regime (about 3 s of CPU); `make calibrate` first runs the
full check (every row of the shipped tables, ~35 s of CPU: ASTRAL_FULL_USES=1)."""
from __future__ import annotations

import os

import pytest

from astral_dsl.runs import fit as F
from astral_dsl.runs import uses as U
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import CONSTANTS, RUN_FILES, shipped
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, STREAM_RATE, Costs, GpuSpec
from astral_dsl.seer.lower_linear import stream_kind

# one row per regime, the first of the shipped tables' rows to bring each (a greedy cover of
# the features uses() and the lowering branch on, at stop 55)
REGIMES = {
    "k22b_full": "A100, Megatron-LM 2022: unfused attention, bf16, TP, no pipeline",
    "k175b_full": "A100: a pipeline",
    "n1_7b": "A100, Narayanan et al. 2021: fp16, no TP",
    "r001": "GB200 MXFP8 MoE: HybridEP, EP overlap, CUDA graphs, cuDNN attention",
    "r003": "GB200 MXFP8 attention (attention_precision = fp8: NeMo 26.08 GPT-OSS 120B)",
    "r014": "Nemotron-H hybrid Mamba on Blackwell: MoE without CUDA graphs",
    "r020": "H100 FP8 current scaling, Transformer Engine attention (FlashAttention-3)",
    "r040": "B200 BF16 MoE, all-to-all dispatcher",
    "r047": "MoE, DeepEP dispatcher",
    "r117": "Blackwell FP8",
    "r137": "H100 BF16 MoE, EP",
    "r142": "ZeRO-3 (FSDP)",
    "r196": "attention = flash2 (FlashAttention-2 under Megatron-Core)",
    "r206": "NeMo AutoModel",
    "r210": "AutoModel MoE without EP, flash2",
    "r213": "torchtitan (SDPA) on a power-capped GPU, eager",
    "r214": "torchtitan with torch.compile",
    "r241": "H100 fp8 row-wise (block) scaling",
}


def _problem(ids):
    tables = []
    for name in sorted(RUN_FILES):
        table = read_table(RUN_FILES[name])
        tables.append((name, type(table)(table.file, tuple(r for r in table.runs
                                                           if r.id in ids))))
    rows, _ = F.rows_of(tables)
    assert sorted(r.prepared.row.id for r in rows) == sorted(ids)
    return F.Problem(rows, CONSTANTS, shipped())


@pytest.fixture(scope="module")
def regimes():
    return _problem(set(REGIMES))


def _named(prob, pairs):
    return [(prob.rows[i].prepared.row.id, c) for i, c in pairs]


def test_the_regimes_cover_what_uses_branches_on(regimes):
    specs = [(s, r.prepared.gpu) for s, r in zip(regimes.specs, regimes.rows)]
    assert {s.attention for s, _ in specs} == {"unfused", "flash", "flash2"}
    assert {s.framework for s, _ in specs} == {"megatron", "automodel", "torchtitan"}
    assert {g.arch for _, g in specs} == {"ampere", "hopper", "blackwell"}
    assert {s.gemm_precision for s, _ in specs} >= {"bf16", "fp16", "fp8", "fp8_block", "mxfp8"}
    assert {s.moe_dispatcher for s, _ in specs if s.model.experts and s.parallel.ep > 1} == {
        "alltoall", "deepep", "hybridep"}
    assert {s.cuda_graphs for s, _ in specs} == {True, False}
    assert any(s.model.hybrid for s, _ in specs) and any(g.capped for _, g in specs)
    assert any(s.parallel.zero >= 3 for s, _ in specs)
    assert any(s.ep_overlap_share > 0 for s, _ in specs)
    assert any(s.fp8_attention for s, _ in specs)


def test_uses_lists_every_constant_that_moves_a_regimes_row(regimes):
    assert _named(regimes, U.unlisted(regimes, shipped())) == []


def test_the_check_finds_the_omissions_it_was_written_for(regimes, monkeypatch):
    """uses() as it was before stops 54 and 55: the flash2 row under attn_eff, softmax_eff for
    the unfused rows alone; the check names both (on the two rows and two constants)."""
    fixed = U.uses

    def old(name, spec, gpu):
        if name == "softmax_eff":
            return spec.attention == "unfused"
        if name in ("attn_eff", "attn_eff_sdpa") and spec.attention == "flash2" and \
                spec.framework == "megatron":
            return name == "attn_eff"
        return fixed(name, spec, gpu)

    monkeypatch.setattr(F, "uses", old)              # the Jacobian's rows (find_depends)
    monkeypatch.setattr(U, "uses", old)              # and the check's
    ids = {"r020", "r196"}
    idx = [i for i, r in enumerate(regimes.rows) if r.prepared.row.id in ids]
    sub = F.Problem([regimes.rows[i] for i in idx],
                    [c for c in CONSTANTS if c.name in ("softmax_eff", "attn_eff_sdpa")],
                    shipped())
    assert sorted(_named(sub, U.unlisted(sub, shipped()))) == [
        ("r020", "softmax_eff"), ("r196", "attn_eff_sdpa"), ("r196", "softmax_eff")]


def test_the_cross_entropy_streams_at_softmax_eff():
    """The cross-entropy of a job's head is a softmax over the vocabulary: on an H100 SXM
    (3.35 TB/s) 1 GB at 0.85 x softmax_eff of the bandwidth, plus one kernel's KERNEL_S."""
    assert stream_kind("cross entropy", "elementwise") == "softmax"
    assert stream_kind("mtp cross entropy bwd", "elementwise") == "softmax"
    assert stream_kind("attn dropout", "elementwise") == "dropout"
    assert stream_kind("final norm", "norm") == "norm"
    assert STREAM_RATE["softmax"] == "softmax_eff"
    cal = shipped()
    c = Costs(GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9), "bf16",
              calibration=cal)
    expected = 1e9 / (3.35e12 * HBM_EFF * cal.softmax_eff) + KERNEL_S
    assert c.stream("cross entropy", 1e9, kind="softmax") == pytest.approx(expected, rel=1e-12)


@pytest.mark.skipif(os.environ.get("ASTRAL_FULL_USES") != "1",
                    reason="every row of the shipped tables: ~35 s of CPU, run by `make "
                           "calibrate` (ASTRAL_FULL_USES=1)")
def test_uses_lists_every_constant_that_moves_any_row():
    tables = [(name, read_table(RUN_FILES[name])) for name in sorted(RUN_FILES)]
    rows, _ = F.rows_of(tables)
    prob = F.Problem(rows, CONSTANTS, shipped())
    assert _named(prob, U.unlisted(prob, shipped())) == []
