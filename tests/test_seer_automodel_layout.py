"""NeMo AutoModel's pipeline split (seer/stages.py automodel_layout): layers // stages on each
(virtual) stage, the remainder one more on each of the first, the embedding and the head not
counted as layers (nemo_automodel 0.1.0-0.7.0 components/distributed/pipelining/functional.py,
generate_hf_model_fqn_per_model_part), where Megatron-Core and torchtitan count each as a layer
(derived_layout); and the runs table's AutoModel rows with a pipeline read so."""
from __future__ import annotations

import attrs

from astral_dsl.runs.evaluate import prepare_row
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import RUN_FILES
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.stages import automodel_layout, chunk_layers, derived_layout, stage_layers

DENSE = ModelSpec("m", 10, 1024, 8, 8, 4096, 32000, 2048, "swiglu")


def job(framework: str, layers: int = 10, pp: int = 2, v: int = 2) -> JobSpec:
    return JobSpec("j", attrs.evolve(DENSE, layers=layers),
                   ParallelSpec(pp=pp, dp=1, v=v, schedule="interleaved"), 8, 1, 2048, "none",
                   "bf16", framework=framework)


def test_automodel_puts_the_remainder_on_the_first_stages_and_counts_no_embedding_or_head():
    # 61 layers on 32 stages: 61 // 32 = 1, 61 % 32 = 29 -> 29 stages of 2, then 3 of 1
    assert automodel_layout(61, 32) == (2,) * 29 + (1,) * 3
    assert derived_layout(61, 8, 4, "automodel") == (2,) * 29 + (1,) * 3
    assert derived_layout(61, 4, 8, "automodel") == (2,) * 29 + (1,) * 3
    # Megatron-Core / torchtitan: (61 + 2) = 32 x 1 + 31 -> 31 of 2, one of 1, then the
    # embedding's and the loss's layer taken off the first and the last: 1, 2 x 30, 0
    assert derived_layout(61, 8, 4) == (1,) + (2,) * 30 + (0,)
    assert automodel_layout(10, 4) == (3, 3, 2, 2)
    assert automodel_layout(3, 4) is None              # AutoModel rejects more stages than layers
    assert derived_layout(64, 8, 4, "automodel") is None    # even: no layout needed
    assert derived_layout(10, 2, 1, "automodel") is None


def test_an_automodel_job_lays_its_chunks_out_as_automodel_does():
    # 10 layers on 2 ranks x 2 chunks, virtual stages (3, 3, 2, 2) in model order; rank i holds
    # virtual stages i and i + 2: rank 0 layers 0-2 and 6-7, rank 1 layers 3-5 and 8-9
    assert chunk_layers(job("automodel")) == (((0, 3), (6, 2)), ((3, 3), (8, 2)))
    assert stage_layers(job("automodel")) == (5, 5)
    # Megatron-Core's: (12 // 4 = 3) x 4 less the embedding and the loss: (2, 3, 3, 2)
    assert chunk_layers(job("megatron")) == (((0, 2), (5, 3)), ((2, 3), (8, 2)))
    # without virtual stages: 10 layers on 4 stages, 3, 3, 2, 2 against 2, 3, 3, 2
    assert stage_layers(job("automodel", pp=4, v=1)) == (3, 3, 2, 2)
    assert stage_layers(job("megatron", pp=4, v=1)) == (2, 3, 3, 2)


def test_the_automodel_rows_with_a_pipeline_are_read_with_its_split():
    """Kimi K2 (PP 8, VP 4) and DeepSeek-V3 (PP 4, VP 8): 61 layers on 32 virtual stages, rank i
    holding virtual stages i, i + pp, ...: Kimi K2's ranks 0-4 hold 8 layers, 5-7 hold 7 (the
    last with the head); DeepSeek-V3's rank 0 holds 16, ranks 1-3 15."""
    rows = {r.id: r for r in read_table(RUN_FILES["modern"]).runs}
    for rid, want in (("r208", (8, 8, 8, 8, 8, 7, 7, 7)), ("r206", (16, 15, 15, 15))):
        spec = prepare_row(rows[rid]).spec
        assert spec.parallel.layout == (2,) * 29 + (1,) * 3
        assert stage_layers(spec) == want
