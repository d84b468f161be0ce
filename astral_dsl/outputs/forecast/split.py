"""How a forecast's job splits its layers over the pipeline stages and their chunks, as the
lowering holds them (seer/lower.py `Lowering.chunks`, from seer/stages.py chunk_layers), and
where that split comes from (stages.split_source): the JSON's `parallelism.stage_split`, and
the text's `stages` line when the split is uneven. The embedding is on stage 0 and the output
layer on the last stage (seer/params.py stage_params), the multi-token prediction layers after
the model's last layer, on the last stage (stages.chunk_layers)."""
from __future__ import annotations

import itertools
import re
import textwrap
from typing import Any, Dict, List, Optional, Sequence

from astral_dsl.seer.stages import split_source

# the frameworks whose split derived_layout gives (seer/stages.py): Megatron-Core's with
# --account-for-embedding/loss-in-pipeline-split and torchtitan's count the embedding and the
# loss as a layer each; NeMo AutoModel's counts neither (automodel_layout)
FRAMEWORK_NAMES = {"megatron": "Megatron-Core's", "torchtitan": "torchtitan's",
                   "automodel": "NeMo AutoModel's"}


def chunk_counts(fc) -> List[List[int]]:
    """[stage][chunk] -> the model's layers there (the MTP layers the last chunk also holds
    left out: stage_split's `mtp_layers`)."""
    counts = [[n for _, n in row] for row in fc.lowering.chunks]
    counts[-1][-1] -= fc.job.model.mtp_block
    return counts


def stage_split(fc, counts: Optional[List[List[int]]] = None) -> Dict[str, Any]:
    """`parallelism.stage_split`: `layers` per stage, `chunks` per stage and chunk (null with
    one virtual stage), `source` ("layout", "stages", "derived", "even"), `rule` (the framework
    whose split was derived, else null), where the embedding and the output layer are, and the
    MTP layers on the last stage. `counts`: chunk_counts(fc), when the caller has them."""
    job = fc.job
    counts = chunk_counts(fc) if counts is None else counts
    source = split_source(job)
    return {"layers": [sum(row) for row in counts],
            "chunks": counts if job.parallel.v > 1 else None,
            "source": source, "rule": job.framework if source == "derived" else None,
            "embedding_stage": 0, "output_stage": job.parallel.pp - 1,
            "mtp_layers": job.model.mtp_block}


def runs(xs: Sequence[int]) -> str:
    """A list as the language writes it, `count x value` for a run: [11, 6 x 12, 11]."""
    out = []
    for x, group in itertools.groupby(xs):
        n = len(list(group))
        out.append(f"{n} x {x}" if n > 1 else str(x))
    return "[" + ", ".join(out) + "]"


def wrap(text: str, first: str, indent: str, width: int = 100) -> List[str]:
    """`text` in lines of `width` after `first` (then `indent`), a list in brackets and a
    hyphenated name kept whole."""
    keep = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace(" ", "\xa0"), text)
    return [line.replace("\xa0", " ") for line in
            textwrap.wrap(keep, width, initial_indent=first, subsequent_indent=indent,
                                  break_on_hyphens=False, break_long_words=False)]


def _why(fc, split: Dict[str, Any]) -> str:
    job, par = fc.job, fc.job.parallel
    if split["source"] == "stages" and par.v > 1:
        return "stated: `stages`, each stage's chunks as Megatron-LM splits it"
    if split["source"] in ("layout", "stages"):
        return f"stated: `{split['source']}`"
    if split["source"] == "even":
        return "as even as possible"
    where = "virtual stage" if par.v > 1 else "stage"
    name = FRAMEWORK_NAMES.get(job.framework, f"{job.framework}'s")
    if job.framework == "automodel":
        extra = job.model.layers % (par.pp * par.v)
        return (f"derived: {name} split, the embedding and the head not counted as layers, "
                f"one more layer on each of the first {extra} {where}s")
    return (f"derived: {name} split, the embedding and the loss counted as a layer each on "
            f"the first and the last {where}, all as evenly as possible, the remainder on the "
            f"first {where}s")


def split_lines(fc) -> List[str]:
    """The text's `stages` line (wrapped), when the stages (or their chunks) do not hold as many
    layers each: per stage, per chunk in model order (as `layout` states them) when interleaved, the
    embedding's and the output layer's stages, and where the split comes from."""
    counts, par = chunk_counts(fc), fc.job.parallel
    split = stage_split(fc, counts)
    if len({n for row in counts for n in row}) <= 1:
        return []
    text = f"layers {runs(split['layers'])}"
    if par.v > 1:
        order = [counts[i][c] for c in range(par.v) for i in range(par.pp)]
        text += f" in chunks {runs(order)} (model order)"
    mtp = split["mtp_layers"]
    last = "output layer" + (f" and {mtp} MTP layer{'s' if mtp > 1 else ''}" if mtp else "")
    return wrap(f"{text}, embedding on stage 0, {last} on stage {par.pp - 1} "
                f"({_why(fc, split)})", "  stages     ", " " * 13)
