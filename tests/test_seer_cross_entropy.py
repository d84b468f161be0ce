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
    # Megatron-Bridge 0.3.1's recipes from NeMo 25.11
    ("qwen330ba3b", (26, 2), "te"),          # recipes/qwen/qwen3_moe.py
    ("llama31405b", (26, 4), "te"),          # recipes/llama/llama3.py
    ("deepseekv3", (26, 6), "te"),           # recipes/deepseek/deepseek_v3.py
    ("gptoss120b", (25, 11), "native"),      # recipes/gpt_oss/gpt_oss.py
    ("gptoss120b", (26, 4), "native"),
    ("nemotron3nano", (26, 4), "native"),    # recipes/nemotronh/nemotron_3_nano.py
    # from NeMo 26.06, Megatron-Bridge 0.6.2's performance recipes: _benchmark_common's "te"
    # (perf_recipes/_common.py:30, 68), over the library recipes' native
    ("gptoss120b", (26, 6), "te"),
    ("gptoss120b", (26, 8), "te"),
    ("nemotron3nano", (26, 6), "te"),
    ("mixtral8x7b", (26, 2), None),          # no such recipe read
    ("gpt3175b", (24, 7), None),             # before NeMo 25.04's scripts: not read
    ("deepseekv3", None, None),
])
def test_which_rows_ran_which_cross_entropy(label, release, loss):
    assert recipe_cross_entropy(label, release)[0] == loss


def test_cross_entropy_is_megatron_cores_switch_alone():
    """Under another framework the switch is ignored (W751, tests/bad/jobs): its loss is priced by
    Seer's generic count."""
    job = attrs.evolve(_job("te"), framework="torchtitan")
    low = Lowering(job, Costs(H100, "bf16"), NET)
    f = {o.name: o for o in low.template(0, 0, "F").ops}["cross entropy"]
    assert f.nbytes == pytest.approx(TOKENS * VOCAB * 10)
    assert memory.of_job(job).logits == pytest.approx(TOKENS * VOCAB * 6)


def test_the_shipped_gpt_oss_rows_read_their_releases_cross_entropy():
    """The expressed jobs of modern.csv's GPT-OSS 120B rows: NeMo 26.06's (r022) and 26.08's
    (r003) with Transformer Engine's kernels, as Megatron-Bridge 0.6.2's performance recipes set
    (perf_recipes/_common.py `_benchmark_common`); 26.04.01's (r040) and 25.11's (r131) with the
    library recipe's native ones (recipes/gpt_oss/gpt_oss.py, 0.3.1)."""
    path = Path(__file__).resolve().parents[1] / "astral_dsl/seer/calibration/modern.csv"
    lines = path.read_text().splitlines()
    want = {"r003": "te", "r022": "te", "r040": "native", "r131": "native"}
    text = "\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",")[0] in want]) + "\n"
    got = {p.row.id: p.spec.cross_entropy for p in prepare(parse_table(text, str(path)))}
    assert got == want
