"""Rows of models Seer cannot state (runs/unmodelled.py; docs/runs.md, "Models Seer cannot
state"): not expressible at `model`, naming the feature Seer has no operator for, where they
said only that the row gives no `layers`; and never forecast as a plain transformer when a row
gives widths for one."""
from __future__ import annotations

import csv
import io

import pytest

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.table import COLUMNS, parse_table
from astral_dsl.runs.unmodelled import unmodelled
from astral_dsl.seer.calibration import RUN_FILES

MODERN = list(csv.DictReader(io.StringIO(RUN_FILES["modern"].read_text(encoding="utf-8"))))


def _prepared(rows):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return {p.row.id: p for p in prepare(parse_table(out.getvalue(), "t.csv"))}


# the shipped table's rows of each such model, and words of what its reason must name
SHIPPED = {
    "r002": ("DeepSeek-V4", "compressed sparse attention", "hyper-connections", "hash-routed"),
    "r205": ("Nemotron 3 Ultra", "latent MoE", "`moe_latent_size`", "no operator"),
    **{r: ("Nemotron 3 Super", "latent MoE", "`moe_latent_size`", "no operator",
           "2 multi-token-prediction depths", "Hugging Face config")
       for r in ("r007", "r015", "r028", "r052", "r055", "r076", "r077")},
}


def test_the_shipped_rows_of_models_seer_cannot_state_name_the_missing_feature():
    prepared = _prepared([r for r in MODERN if r["id"] in SHIPPED])
    assert set(prepared) == set(SHIPPED)
    for rid, words in SHIPPED.items():
        p = prepared[rid]
        # before: field `layers`, "the row gives no `layers` and no stdlib model is named ..."
        assert p.status == "not_expressible" and p.field == "model", (rid, p.field, p.reason)
        for word in words:
            assert word in p.reason, (rid, word, p.reason)


def test_widths_given_for_such_a_model_do_not_make_it_a_plain_transformer():
    """A DeepSeek-V4 row with layers, hidden and heads was forecast as SwiGLU transformer layers
    (only `assumed` said so); Seer has none of its attention, connections or routing."""
    row = dict(next(r for r in MODERN if r["id"] == "r002"), layers="43", hidden="4096",
               heads="64", moe_experts="256", moe_topk="6")
    p = _prepared([row])["r002"]
    assert p.status == "not_expressible" and p.field == "model"
    assert "compressed sparse attention" in p.reason


def test_a_hybrid_model_no_stdlib_model_states_says_what_its_cells_cannot():
    """Seer lowers Mamba-2 layers (stdlib Nemotron3_Nano): the reason said it lowers transformer
    layers only."""
    row = dict(next(r for r in MODERN if r["id"] == "r117"), model="Nemotron-H 8B", layers="52",
               hidden="4096", heads="32", notes="hybrid Mamba layers")
    p = _prepared([row])["r117"]
    assert p.status == "not_expressible" and p.field == "model"
    assert "transformer layers only" not in p.reason
    assert "cannot state its Mamba-2 layers nor their pattern" in p.reason


@pytest.mark.parametrize("label, starts", [
    ("Nemotron_3_Super", "Nemotron 3 Super is a latent MoE"),
    ("Nemotron V3 Super 120B", "Nemotron 3 Super is a latent MoE"),
    ("Nemotron V3 Ultra 550B (26.04)", "Nemotron 3 Ultra is a latent MoE"),
    ("Nemotron_3_5_Lightning", None),
    ("DeepSeekV4 Flash", "DeepSeek-V4's compressed sparse attention"),
    ("DeepSeek-V4-Pro", "DeepSeek-V4's compressed sparse attention"),
    ("Nemotron_3_Nano", None), ("DeepSeekV3", None), ("Nemotron-4 340B", None), ("", None)])
def test_which_labels_are_models_seer_cannot_state(label, starts):
    why = unmodelled(label)
    assert (why is None) if starts is None else why.startswith(starts), why


def test_the_stdlib_models_of_the_tables_are_still_expressed():
    """Nemotron 3 Nano's rows (its label begins as Super's and Ultra's do) are forecast, and
    Nemotron 3.5 Lightning's (r006: not expressible at `model` before stdlib.models
    Nemotron3_5_Lightning stated its shared MTP block)."""
    nano = [r for r in MODERN if r["model"] in ("Nemotron_3_Nano", "Nemotron_3_5_Lightning")]
    assert len(nano) >= 6
    assert all(p.status == "ok" for p in _prepared(nano).values())
