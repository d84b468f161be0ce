"""Beyond the scale and layout of the calibration runs (seer/checked.py): the ranges a fit
records, `calibration.extrapolated` and W759 at the job's field that is outside, the ranges of
an older fit unknown (never inside), the reference job's 16,384 GPUs, and the compact marks of
`search` and `sweep` rows."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.explore import search, sweep
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.outputs import search as search_out
from astral_dsl.outputs import sweep as sweep_out
from astral_dsl.seer import checked
from astral_dsl.seer.calibration import FIT_FORMAT, Calibration, priors, read_calibration, \
    shipped
from astral_dsl.seer.envelope import envelope

from test_cli import call
from test_envelope import H100

REPO = Path(__file__).resolve().parents[1]

LAB = H100 % "bf16"            # Llama 3 8B on 16 H100s: TP 8, DP 2, 4,096 tokens
# the lab job's point, by hand: 16 GPUs on DGX H100s (8 a host: 2 hosts under one leaf, one
# tier), TP 8, DP 2, micro-batch 1, 4,096 tokens, Llama 3 8B (4,096 wide, 32 layers)
POINT = {"gpus": 16, "tiers": 1, "nvlink_domain": 8, "tp": 8, "pp": 1, "cp": 1, "ep": 1,
         "dp": 2, "micro": 1, "seq": 4096, "hidden": 4096, "layers": 32, "offload": 0}
# the shipped fit's ranges but for the GPUs (at most 8 checked) and the sequence (2,048): they
# hold the lab job (and the layouts a search of it ranks) but for those two
NARROW = dict(shipped().ranges, gpus=[1, 8], seq=[2048, 2048])


def _fit(ranges) -> Calibration:
    return Calibration(priors().values(), ("mine",), {}, "mine.json",
                       None if ranges is None else {k: tuple(v) for k, v in ranges.items()})


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    d = tmp_path_factory.mktemp("extrapolation")
    path = d / "lab.astral"
    path.write_text(LAB, encoding="utf-8")
    fit = d / "fit.json"
    doc = dict(json.loads((REPO / "astral_dsl/seer/calibration/fit.json").read_text("utf-8")),
               ranges=NARROW)
    fit.write_text(json.dumps(doc), encoding="utf-8")
    old = d / "old.json"           # written before the ranges were recorded
    old.write_text(json.dumps({"format": FIT_FORMAT, "fitted_on": ["mine"],
                               "constants": priors().values()}), encoding="utf-8")
    return path, fit, old


def test_a_point_is_the_jobs_scale_and_layout(lab):
    design = astral_dsl.load(lab[0])
    fc = seer.forecast(design)
    p = checked.point(fc.job, fc.net)
    # Llama 3 8B: 32 layers of 4,096 x (1,024 + 1,024 + 4,096 attention, 3 x 14,336 MLP) + 2 x
    # 4,096 norms, and 2 x 128,256 x 4,096 embedding and output: 8.03e9
    h = 4096
    layer = h * (h + 1024 + 1024 + h) + 3 * h * 14336 + 2 * h
    assert p.pop("params") == pytest.approx(32 * layer + 2 * 128256 * h, rel=1e-3)
    assert p == POINT


def test_within_every_range_nothing_is_extrapolated_and_no_w759(lab):
    design = astral_dsl.load(lab[0])
    wide = dict(NARROW, gpus=[8, 1024], seq=[2048, 8192])
    assert all(lo <= POINT[k] <= hi for k, (lo, hi) in wide.items() if k in POINT)
    fc = seer.forecast(design, calibration=_fit(wide))
    assert fc.envelope().extrapolated == ()
    assert fc.envelope().as_json()["extrapolated"] == []
    assert "W759" not in {d.code for d in fc.diagnostics}
    # the ends of a range are inside it
    assert checked.beyond({"gpus": 8}, {"gpus": (8, 8)}) == ()


def test_below_every_run_w759_says_below(lab):
    """A job smaller than every calibration run is as unmeasured as a larger one (checked.py):
    W759 and the report say it lies below the runs, not beyond them; one below in a dimension
    and above in another lies outside them. The lab job: 16 GPUs, 4,096 tokens."""
    design = astral_dsl.load(lab[0])
    below = dict(NARROW, gpus=[32, 1024], seq=[2048, 8192])      # 16 < 32
    fc = seer.forecast(design, calibration=_fit(below))
    (w,) = [d for d in fc.diagnostics if d.code == "W759"]
    assert w.message == ("job `train`: the forecast extrapolates below the calibration runs: "
                         "gpus 16 (checked 32-1,024)")
    assert "outside those ranges" in w.hint and "beyond" not in w.hint
    from astral_dsl.outputs.forecast.report import render
    assert "extrapolated below the calibration runs: gpus 16 (checked 32-1,024)" in render(fc)
    mixed = dict(NARROW, gpus=[32, 1024])                        # gpus below, seq 4,096 above
    (w,) = [d for d in seer.forecast(design, calibration=_fit(mixed)).diagnostics
            if d.code == "W759"]
    assert w.message.startswith("job `train`: the forecast extrapolates outside the "
                                "calibration runs: gpus 16 (checked 32-1,024); seq 4,096")
    assert checked.direction(checked.beyond({"tp": 16}, {"tp": (1, 8)})) == "beyond"


def test_beyond_a_range_w759_names_it_at_the_field_and_the_band_stays(lab):
    design = astral_dsl.load(lab[0])
    cal = _fit(NARROW)
    fc = seer.forecast(design, calibration=cal)
    env = fc.envelope()
    assert env.as_json()["extrapolated"] == [
        {"field": "gpus", "value": 16, "checked": [1, 8]},
        {"field": "seq", "value": 4096, "checked": [2048, 2048]}]
    # the band and `inside` are the regime's, as without the ranges
    plain = envelope(fc.job, fc.gpu, _fit(None))
    assert (env.inside, env.band, env.basis) == (plain.inside, plain.band, plain.basis)
    (w,) = [d for d in fc.diagnostics if d.code == "W759"]
    assert w.message == ("job `train`: the forecast extrapolates beyond the calibration runs: "
                         "gpus 16 (checked 1-8); seq 4,096 (checked 2,048-2,048)")
    text = LAB.split("\n")
    line = next(i for i, s in enumerate(text, 1) if "gpus = 16" in s)
    assert (w.span.start.line, w.span.start.column) == (line, text[line - 1].index("16") + 1)
    assert w.notes == ("GPUs of the job: gpus 16 (checked 1-8)",
                       "sequence length: seq 4,096 (checked 2,048-2,048)")
    assert "astral calibrate" in w.hint and "--calibration" not in w.hint
    # the sequence alone: at `seq` in the batch record
    fc = seer.forecast(design, calibration=_fit(dict(NARROW, gpus=[8, 16])))
    (w,) = [d for d in fc.diagnostics if d.code == "W759"]
    line = next(i for i, s in enumerate(text, 1) if "seq = 4096" in s)
    assert (w.span.start.line, w.span.start.column) == (line, text[line - 1].index("4096") + 1)
    # a degree the job leaves to its default (cp 1, below the lowest checked 2): the record
    # that leaves it; the model's width: the job's `model`
    for ranges, where in (({"cp": (2, 16)}, "parallel {"), ({"hidden": (5000, 8000)},
                                                             "Llama3_8B")):
        fc = seer.forecast(design, calibration=_fit(dict(shipped().ranges, **ranges)))
        (w,) = [d for d in fc.diagnostics if d.code == "W759"]
        line = next(i for i, s in enumerate(text, 1) if s.lstrip().startswith(where)
                    or "= " + where in s)
        assert (w.span.start.line, w.span.start.column) == (line,
                                                            text[line - 1].index(where) + 1)


def test_an_older_fit_without_ranges_is_unknown_never_inside(lab, capsys):
    path, _, old = lab
    cal = read_calibration(old)
    assert cal.ranges is None
    code, out, _ = call(["forecast", str(path), "--calibration", str(old), "--format", "json"],
                        capsys)
    doc = json.loads(out)
    ext = doc["calibration"]["extrapolated"]
    assert [e["field"] for e in ext] == list(checked.NAMES)
    assert all(e["checked"] is None for e in ext)
    (w,) = [d for d in doc["diagnostics"] if d["code"] == "W759"]
    assert "records no ranges of the runs it was fitted on" in w["message"]
    assert "fit it again" in w["hint"]


@pytest.mark.parametrize("ranges,why", [
    ({"gpu": [1, 8]}, "ranges['gpu'] is no dimension Seer checks"),
    ({"gpus": [8, 1]}, "ranges['gpus'] = [8, 1] is not a range"),
    # 1e300 GPUs was read, and W759 said "checked 1,000,...,000" with 301 digits
    ({"gpus": [8, 1e300]}, "ranges['gpus'] = [8, 1e+300] is not a range 0 <= lowest <= highest "
                           "<= 2^53 (a count of the runs fitted)"),
    ({"gpus": 8}, "ranges['gpus'] is not [lowest, highest]"),
    ([], "`ranges` is not an object"),
])
def test_a_hand_edited_range_is_a_usage_error(lab, tmp_path, ranges, why):
    doc = dict(json.loads(lab[2].read_text("utf-8")), ranges=ranges)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_calibration(path)
    assert why in str(err.value)


def test_the_reference_job_is_beyond_the_shipped_runs_gpus():
    """examples/astral.astral: Llama 3 405B on 16,384 GPUs, TP 8, PP 16, DP 128, 8K tokens;
    the shipped runs went up to 1,024 GPUs (astral_dsl/seer/calibration: the largest runs,
    GPT-3 175B and Llama 3.1 405B on 1,024 GPUs), PP 64 (Megatron 1T), DP 256, sequences of
    512K, 25,600 wide, 128 layers and 1.03 T parameters: only the GPUs are beyond."""
    ranges = shipped().ranges
    assert ranges["gpus"] == (8, 1024)
    fc = seer.forecast(astral_dsl.load(REPO / "examples/astral.astral"))
    assert fc.envelope().as_json()["extrapolated"] == [
        {"field": "gpus", "value": 16384, "checked": [8, 1024]}]
    (w,) = [d for d in fc.diagnostics if d.code == "W759"]
    assert w.message.endswith("gpus 16,384 (checked 8-1,024)")
    assert "gpus = 16384" in (REPO / "examples/astral.astral").read_text("utf-8").split(
        "\n")[w.span.start.line - 1]


def test_search_and_sweep_rows_mark_it_compactly(lab):
    path, fit, _ = lab
    result = search.run(str(path), top=2, engine=LocalEngine(1),
                        calibration=read_calibration(fit))
    for r in result.rows:
        assert [b["field"] for b in r["calibration"]["extrapolated"]] == ["gpus", "seq"]
    text = search_out.table(result, width=200)
    assert " ^" in text.split("band")[1]
    flat = " ".join(text.split())
    assert ("beyond the scale or layout of the calibration runs (marked ^; no run measured the "
            "error there, W759): gpus 16 (checked 1-8) in every ranked row; seq 4,096 (checked "
            "2,048-2,048) in every ranked row") in flat
    rows = list(csv.DictReader(io.StringIO(search_out.csv_text(result))))
    assert rows[0]["extrapolated"] == "gpus seq"
    result = sweep.run(str(path), ["n=1"], job="train", engine=LocalEngine(1),
                       calibration=read_calibration(fit))
    [row] = [json.loads(line) for line in sweep_out.jsonl(result, False).splitlines()]
    assert "W759" in row["warnings"]
    [cell] = [r["calibration"] for r in csv.DictReader(io.StringIO(
        sweep_out.csv_text(result, False)))]
    assert cell.endswith(" ^ gpus+seq")


def test_layers_offloaded_beyond_any_runs_are_extrapolated(lab):
    """The layers whose activations go to host memory are a dimension (seer/checked.py): the
    shipped fit's runs had at most 49 (the rule's choice for NeMo's GB200 Llama 3.1 405B rows,
    r144 and r190, since stop 60's refit; 50 before), and a job the ranges say offloads more
    than any run did is extrapolated there, W759 at its `offload_layers`."""
    assert shipped().ranges["offload"] == (0, 49)
    design = astral_dsl.load(lab[0])
    job = seer.forecast(design).job
    spec = job.with_(offload_layers=3)
    assert checked.point(spec)["offload"] == 3
    (far,) = checked.beyond({"offload": 3}, dict(shipped().ranges, offload=(0, 2)))
    assert (far.field, far.value, far.checked, far.below) == ("offload", 3, (0, 2), False)
    assert far.text() == "offload 3 (checked 0-2)"
    assert checked.beyond({"offload": 3}, shipped().ranges) == ()


def test_the_schemas_name_every_dimension_seer_checks():
    """Each command's JSON Schema lists `calibration.extrapolated[].field` as the dimensions of
    seer/checked.py, in its order (a dimension added there was missing from them)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "schema"

    def enums(node):
        if isinstance(node, dict):
            if node.get("enum") and "nvlink_domain" in node["enum"]:
                yield node["enum"]
            for v in node.values():
                yield from enums(v)
        elif isinstance(node, list):
            for v in node:
                yield from enums(v)

    for name in ("forecast", "runs", "search", "sweep"):
        found = list(enums(json.loads((root / f"{name}.schema.json").read_text())))
        assert found and all(e == list(checked.NAMES) for e in found), name


def test_a_fit_without_a_newer_dimensions_range_names_it_not_no_ranges(lab):
    """A fit written before Seer checked a dimension (`offload`, of this version) records the
    other ranges: W759 and the report name the one it lacks, "checked range unknown", and do
    not say it records no ranges at all (they did: every dimension outside was unknown)."""
    design = astral_dsl.load(lab[0])
    wide = dict(NARROW, gpus=[8, 1024], seq=[2048, 8192])
    del wide["offload"]
    # a job that offloads nothing extrapolates nothing of offloading (checked.NO_MECHANISM):
    # the fits written before the dimension did not warn on every forecast
    plain = seer.forecast(design, calibration=_fit(wide))
    assert plain.envelope().extrapolated == ()
    assert not [d for d in plain.diagnostics if d.code == "W759"]
    fc = seer.forecast(design, calibration=_fit(wide), offload_layers=2)
    env = fc.envelope()
    assert [(b.field, b.checked) for b in env.extrapolated] == [("offload", None)]
    assert env.beyond_text() == "offload 2 (checked range unknown)"
    (w,) = [d for d in fc.diagnostics if d.code == "W759"]
    assert "records no ranges" not in w.message
    assert w.message == (
        "job `train`: the calibration `mine.json` records no range of layers whose activations "
        "are offloaded to host memory (it was fitted before Seer checked them): whether the "
        "forecast extrapolates there cannot be told: offload 2 (checked range unknown)")
    assert "fit it again" in w.hint
    # a fit with no ranges at all is still said so
    assert checked.no_ranges((b.field, b.checked)
                             for b in seer.forecast(design, calibration=_fit(None))
                             .envelope().extrapolated)
