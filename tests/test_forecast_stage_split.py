"""`astral forecast` says how many layers each pipeline stage (and each chunk, interleaved) holds,
and where that split comes from (outputs/forecast/split.py): in the JSON's
`parallelism.stage_split` always, in the text as a `stages` line under `parallel` when the split
is uneven. Before, neither said it: Qwen3 235B-A22B's 94 layers on 8 stages, split 11, 6 x 12,
11 by Megatron-Core's rule (seer/stages.py derived_layout), read as if even. Expected splits by
hand from the rules cited in seer/stages.py."""
from __future__ import annotations

from pathlib import Path

import astral_dsl
from astral_dsl import seer
from astral_dsl.outputs.forecast.report import render, to_json
from astral_dsl.outputs.forecast.split import runs

REPO = Path(__file__).resolve().parents[1]

LAB = """
import stdlib.systems { DGX_H100_SU, NDR_Fabric }
import stdlib.models { Llama3_8B, Qwen3_235B_A22B }
model Mtp8B {
  layers = 32, hidden = 4096, heads = 32, kv_heads = 8, ffn = 14336, vocab = 128256
  seq = 8192, activation = swiglu, mtp_layers = 1
}
model Odd30 {
  layers = 30, hidden = 4096, heads = 32, kv_heads = 8, ffn = 14336, vocab = 128256
  seq = 8192, activation = swiglu
}
site Lab { sus = 1 x DGX_H100_SU, fabric = NDR_Fabric }
job train {
  model = Llama3_8B, placement = Lab, gpus = 16
  parallel { tp = 4, pp = 4, dp = 1, zero = 1 }
  batch { global_batch = 16, micro = 1, seq = 4096 }
  recompute = selective
}
job odd {
  model = Odd30, placement = Lab, gpus = 16
  parallel { tp = 4, pp = 4, dp = 1, zero = 1 }
  batch { global_batch = 16, micro = 1, seq = 4096 }
  recompute = selective
}
job qwen {
  model = Qwen3_235B_A22B, placement = Lab, gpus = 256
  parallel { tp = 2, pp = 8, dp = 16, ep = 16, sp = true, zero = 1 }
  batch { global_batch = 16, micro = 1, seq = 4096 }
  recompute = selective
}
job mtp {
  model = Mtp8B, placement = Lab, gpus = 16
  parallel { tp = 4, pp = 4, dp = 1, zero = 1, stages = [9, 2 x 8, 7] }
  batch { global_batch = 16, micro = 1, seq = 4096 }
  recompute = selective
}
"""


def _forecast(job="train", **options):
    design = astral_dsl.loads(LAB, name="lab.astral", root=REPO)
    return seer.forecast(design, job=job, **options)


def _stages_lines(text: str) -> list:
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("  stages ")]
    if not at:
        return []
    out = [lines[at[0]]]
    for line in lines[at[0] + 1:]:
        if not line.startswith(" " * 13):
            break
        out.append(line)
    return out


def _stages_text(fc) -> str:
    """The forecast's `stages` line and its continuations, as one line of single spaces."""
    return " ".join(" ".join(_stages_lines(render(fc))).split())


def _split(fc) -> dict:
    """The forecast's JSON `parallelism.stage_split`."""
    return to_json(fc)["parallelism"]["stage_split"]


def test_runs_write_a_list_as_the_language_does():
    assert runs([11, 12, 12, 12, 12, 12, 12, 11]) == "[11, 6 x 12, 11]"
    assert runs([3, 4, 4, 2]) == "[3, 2 x 4, 2]"
    assert runs([5]) == "[5]"


def test_an_even_split_has_no_stages_line_and_says_even_in_json():
    fc = _forecast()                          # 32 layers on 4 stages: 8 each
    assert _stages_lines(render(fc)) == []
    split = _split(fc)
    assert split == {"layers": [8, 8, 8, 8], "chunks": None, "source": "even", "rule": None,
                     "embedding_stage": 0, "output_stage": 3, "mtp_layers": 0}


def test_a_derived_split_is_shown_with_its_rule():
    # 30 layers on 4 stages: Megatron-Core's split counts the embedding and the loss as a layer
    # each: 32 = 4 x 8 -> 8 each, less one on the first and the last: 7, 8, 8, 7
    fc = _forecast("odd")
    text = _stages_text(fc)
    assert text == ("stages layers [7, 2 x 8, 7], embedding on stage 0, output layer on stage 3 "
                    "(derived: Megatron-Core's split, the embedding and the loss counted as a "
                    "layer each on the first and the last stage, all as evenly as possible, the "
                    "remainder on the first stages)")
    split = _split(fc)
    assert split["layers"] == [7, 8, 8, 7] and split["chunks"] is None
    assert (split["source"], split["rule"]) == ("derived", "megatron")


def test_an_interleaved_derived_split_gives_each_chunk_in_model_order():
    # 32 layers on 4 stages x 3 chunks: 34 = 12 x 2 + 10 -> ten virtual stages of 3, two of 2,
    # less one on the first and the last: [2, 3 x 9, 2, 1] in model order; stage i holds virtual
    # stages i, i + 4, i + 8: [2, 3, 3], [3, 3, 3], [3, 3, 2], [3, 3, 1]
    fc = _forecast(virtual_stages=3, schedule="interleaved")
    text = _stages_text(fc)
    assert text.startswith("stages layers [8, 9, 8, 7] in chunks [2, 9 x 3, 2, 1] (model "
                           "order), embedding on stage 0, output layer on stage 3 (derived: "
                           "Megatron-Core's split")
    assert text.endswith("the first and the last virtual stage, all as evenly as possible, the "
                         "remainder on the first virtual stages)")
    split = _split(fc)
    assert split["chunks"] == [[2, 3, 3], [3, 3, 3], [3, 3, 2], [3, 3, 1]]
    assert split["layers"] == [8, 9, 8, 7]
    # the lowering's chunks are those shown: (first layer, count), chunk-major model order
    assert fc.lowering.chunks[3] == ((8, 3), (20, 3), (31, 1))


def test_nemo_automodel_split_counts_neither_embedding_nor_head():
    # 32 layers on 12 virtual stages: 32 // 12 = 2, 32 % 12 = 8 -> [8 x 3, 4 x 2]; stage i holds
    # virtual stages i, i + 4, i + 8: [3, 3, 2] each
    fc = _forecast(virtual_stages=3, schedule="interleaved", framework="automodel")
    text = _stages_text(fc)
    assert text == ("stages layers [4 x 8] in chunks [8 x 3, 4 x 2] (model order), embedding "
                    "on stage 0, output layer on stage 3 (derived: NeMo AutoModel's split, the "
                    "embedding and the head not counted as layers, one more layer on each of "
                    "the first 8 virtual stages)")
    split = _split(fc)
    assert (split["source"], split["rule"]) == ("derived", "automodel")
    assert split["chunks"] == [[3, 3, 2]] * 4


def test_a_stated_layout_says_so():
    # stage i holds virtual stages i, i + 4, i + 8: [4, 3, 3], [3, 3, 2], [3, 3, 1], [3, 3, 1]
    fc = _forecast(layout=[4, 3, 3, 3, 3, 3, 3, 3, 3, 2, 1, 1], virtual_stages=3,
                   schedule="interleaved")
    text = _stages_text(fc)
    assert text == ("stages layers [10, 8, 2 x 7] in chunks [4, 8 x 3, 2, 2 x 1] (model order), "
                    "embedding on stage 0, output layer on stage 3 (stated: `layout`)")
    split = _split(fc)
    assert split["source"] == "layout" and split["rule"] is None
    assert split["chunks"] == [[4, 3, 3], [3, 3, 2], [3, 3, 1], [3, 3, 1]]


def test_stated_stages_with_mtp_on_the_last_stage():
    # the MTP layer follows the model's last layer on the last stage (stages.chunk_layers): the
    # lowering's last chunk holds 7 + 1, the split shows the model's 7 and the MTP layer apart
    fc = _forecast("mtp")
    assert fc.lowering.chunks[3] == ((25, 8),)
    text = _stages_text(fc)
    assert text == ("stages layers [9, 2 x 8, 7], embedding on stage 0, output layer and 1 MTP "
                    "layer on stage 3 (stated: `stages`)")
    split = _split(fc)
    assert split["layers"] == [9, 8, 8, 7] and split["mtp_layers"] == 1
    assert split["source"] == "stages"


def test_the_stages_line_is_wrapped_without_breaking_a_list():
    fc = _forecast(virtual_stages=3, schedule="interleaved")
    lines = _stages_lines(render(fc))
    assert len(lines) > 1 and all(len(line) <= 100 for line in lines)
    assert all(line.count("[") == line.count("]") for line in lines)


def test_the_split_docs_seer_quotes_is_the_forecasts():
    # Qwen3 235B-A22B's 94 layers on 8 stages: 96 = 8 x 12, less one on the first and the last
    fc = _forecast("qwen")
    assert _split(fc)["layers"] == [11] + [12] * 6 + [11]
    block = "\n".join(_stages_lines(render(fc)))
    assert "```\n" + block + "\n```" in (REPO / "docs" / "seer.md").read_text(encoding="utf-8")
    ds = seer.forecast(astral_dsl.load(REPO / "examples" / "gb200_nvl72.astral"),
                       job="deepseek_v3")
    shown = " ".join(" ".join(_stages_lines(render(ds))).split())
    assert shown.startswith("stages layers [15, 2 x 16, 14] in chunks [3, 14 x 4, 2] (model "
                            "order)")
