"""The head's cross-entropy by the kernels a job runs (`cross_entropy`, seer/lower_dense.py
CROSS_ENTROPY): Transformer Engine's Triton kernels (2.11.0 pytorch/triton/cross_entropy.py) or
Megatron-Core's fused fp32 ones (0.16.0 fusions/fused_cross_entropy.py), counted from the code;
the logits they keep for the backward (seer/memory.py); and which NVIDIA rows ran which
(runs/loss_recipe.py)."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.loss_recipe import recipe_cross_entropy
from astral_dsl.runs.table import parse_table
from astral_dsl.seer import memory
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer import H100, LLAMA_8B, NET

TOKENS, VOCAB = 2 * 8192, 128256


def _job(loss):
    job = JobSpec("ce", LLAMA_8B, ParallelSpec(tp=1, pp=1, dp=8), 8, 2, 8192, "none", "bf16")
    return attrs.evolve(job, cross_entropy=loss)


def _ops(loss, phase):
    low = Lowering(_job(loss), Costs(H100, "bf16"), NET)
    return {o.name: o for o in low.template(0, 0, phase).ops}


@pytest.mark.parametrize("loss, fwd, bwd, kernels", [
    # TE: online_softmax_kernel reads the bf16 logits (2), cross_entropy_kernel reads them again
    # and writes the gradient in place (2 + 2); backward element_mul_kernel reads and writes it
    ("te", 6, 4, (4, 1)),
    # Megatron-Core: fp32 copy with the row max (2 + 4), subtract/exp/sum in place (4 + 4),
    # div_ in place (4 + 4); backward mul_ in place (4 + 4) and the cast to bf16 (2)
    ("native", 22, 10, (5, 2)),
    # not stated: Seer's generic count, as before the field
    (None, 10, 6, (4, 1)),
])
def test_cross_entropy_bytes_per_logit(loss, fwd, bwd, kernels):
    f, b = _ops(loss, "F")["cross entropy"], _ops(loss, "B")["cross entropy bwd"]
    assert f.nbytes == pytest.approx(TOKENS * VOCAB * fwd)
    assert b.nbytes == pytest.approx(TOKENS * VOCAB * bwd)
    assert (f.kernels, b.kernels) == kernels


def test_te_cross_entropy_is_the_cheapest_and_keeps_only_the_logits():
    times = {loss: _ops(loss, "F")["cross entropy"].dur + _ops(loss, "B")["cross entropy bwd"].dur
             for loss in ("te", "native", None)}
    assert times["te"] < times[None] < times["native"]
    kept = {loss: memory.of_job(_job(loss)).logits for loss in ("te", "native", None)}
    assert kept["te"] == pytest.approx(TOKENS * VOCAB * 2)        # the bf16 logits alone
    assert kept["native"] == kept[None] == pytest.approx(TOKENS * VOCAB * 6)  # + fp32 softmax


@pytest.mark.parametrize("label, release, loss", [
    # NeMo 2.x's performance scripts, every model (2.3.0 utils.py:291, 2.4.0 helpers.py:311,
    # 2.5.3 helpers.py:377)
    ("gpt3175b", (25, 4), "te"),
    ("llama370b", (25, 7), "te"),
    ("qwen330ba3btokendrop", (25, 9), "te"),
    ("gptoss120b", (25, 9), "te"),
    # Megatron-Bridge 0.3.1's recipes from NeMo 25.11 (standing in for its 0.2.x before 26.02)
    ("qwen330ba3b", (26, 2), "te"),          # recipes/qwen/qwen3_moe.py
    ("llama31405b", (26, 4), "te"),          # recipes/llama/llama3.py
    ("deepseekv3", (26, 6), "te"),           # recipes/deepseek/deepseek_v3.py
    ("gptoss120b", (25, 11), "native"),      # recipes/gpt_oss/gpt_oss.py
    ("gptoss120b", (26, 4), "native"),
    ("nemotron3nano", (26, 4), "native"),    # recipes/nemotronh/nemotron_3_nano.py
    # from NeMo 26.06, Megatron-Bridge's performance recipes (0.6.0's through 26.08, 0.6.2's
    # after, alike): _benchmark_common's "te" (perf_recipes/_common.py:30, 68), over the library
    # recipes' native
    ("gptoss120b", (26, 6), "te"),
    ("gptoss120b", (26, 8), "te"),
    ("nemotron3nano", (26, 6), "te"),
    ("mixtral8x7b", (26, 2), None),          # no such recipe read
    ("gpt3175b", (24, 7), None),             # before NeMo 25.04's scripts: not read
    ("deepseekv3", None, None),
])
def test_which_rows_ran_which_cross_entropy(label, release, loss):
    assert recipe_cross_entropy(label, release)[0] == loss


def test_a_row_names_the_recipe_release_its_cross_entropy_is_read_with():
    """GPT-OSS's and Nemotron 3 Nano's `te` from NeMo 26.06 comes from `_benchmark_common`, alike
    in Megatron-Bridge 0.6.0 and 0.6.2 (perf_recipes/_common.py:30, 68); the row names the
    release it is read with, 0.6.0 through NeMo 26.08, 0.6.2 after (it said 0.6.2 for all)."""
    for release, version in (((26, 6), "0.6.0"), ((26, 8), "0.6.0"), ((26, 10), "0.6.2")):
        assert recipe_cross_entropy("gptoss120b", release) == (
            "te", f"Transformer Engine's cross-entropy kernels (cross_entropy_fusion_impl = te: "
                  f"Megatron-Bridge {version}'s performance recipe, _benchmark_common)")

def test_cross_entropy_is_megatron_cores_switch_alone():
    """Under another framework the switch is ignored (W751, tests/bad/jobs): its loss is priced by
    Seer's generic count."""
    job = attrs.evolve(_job("te"), framework="torchtitan")
    low = Lowering(job, Costs(H100, "bf16"), NET)
    f = {o.name: o for o in low.template(0, 0, "F").ops}["cross entropy"]
    assert f.nbytes == pytest.approx(TOKENS * VOCAB * 10)
    assert memory.of_job(job).logits == pytest.approx(TOKENS * VOCAB * 6)


def test_a_nemo_25_11_row_says_its_megatron_bridge_is_read_from_a_later_wheel():
    """NeMo 25.11 is the first release run on Megatron-Bridge's own performance scripts
    (releases.BRIDGE_SCRIPTS_FROM: its Qwen3 235B-A22B on H100, r139, is token-dropless where
    nemo_toolkit 2.6.0's script drops tokens), on a Megatron-Bridge of the 0.2 line, which no
    registry has: 0.3.0 came with 26.02 (releases.BRIDGE_03_FROM). Its rows keep 0.3.1's
    readings and say for whom they stand in (they said 0.3.1's, as if 25.11 had run it); 26.02's
    say 0.3.1's plainly; 25.09's read NeMo 2.x's scripts, with the router unfused."""
    from astral_dsl.runs.stacks import stack_of
    from astral_dsl.runs.table import parse_table

    from test_runs import _csv, _row

    rows = [_row("r139"), _row("r131"),
            _row("r139", id="new", source_version="NeMo 26.02 container (Megatron-Bridge)"),
            _row("r166")]
    stacks = {r.id: stack_of(r, True, 1, 1, 8) for r in parse_table(_csv(rows), "t.csv").runs}
    got = {k: (dict(s.fields).get("cross_entropy"), dict(s.fields).get("router_fusion"))
           for k, s in stacks.items()}
    assert got == {"r139": ("te", True), "r131": ("native", True), "new": ("te", True),
                   "r166": ("te", False)}
    said = {k: [a for a in s.assumed if "cross_entropy_fusion_impl" in a][0]
            for k, s in stacks.items()}
    stand_in = "Megatron-Bridge 0.3.1's recipe, read for NeMo 25.11's own 0.2.x, which no " \
               "registry has)"
    assert said["r139"].endswith(stand_in) and said["r131"].endswith(stand_in)
    assert said["new"].endswith("(cross_entropy_fusion_impl = te: Megatron-Bridge 0.3.1's recipe)")
    assert said["r166"].endswith("NeMo 2.x's performance scripts)")


def test_the_shipped_gpt_oss_rows_read_their_releases_cross_entropy():
    """The expressed jobs of modern.csv's GPT-OSS 120B rows: NeMo 26.06's (r022) and 26.08's
    (r003) with Transformer Engine's kernels, as Megatron-Bridge 0.6.0's performance recipes set
    (perf_recipes/_common.py `_benchmark_common`); 26.04.01's (r040) and 25.11's (r131) with the
    library recipe's native ones (recipes/gpt_oss/gpt_oss.py, 0.3.1)."""
    path = Path(__file__).resolve().parents[1] / "astral_dsl/seer/calibration/modern.csv"
    lines = path.read_text().splitlines()
    want = {"r003": "te", "r022": "te", "r040": "native", "r131": "native"}
    text = "\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",")[0] in want]) + "\n"
    got = {p.row.id: p.spec.cross_entropy for p in prepare(parse_table(text, str(path)))}
    assert got == want
