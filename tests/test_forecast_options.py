"""`astral forecast`'s options read as a user means them: a `--window` past the job's
micro-batches, `A:` to the last, an operator table's rows that priced nothing named, the JSON's
"may not fit" as the table says it (docs/seer.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from astral_dsl.seer.calibration import shipped

from test_cli import call

TINY = Path(__file__).parent / "fixtures" / "diagnose" / "tiny.astral"   # 8 micro-batches


def test_window_reads_a_colon_without_its_end_as_to_the_last():
    from astral_dsl.cli.forecast import _window

    assert _window("3:") == (3, None)          # was (3, 4): one micro-batch, in silence
    assert _window(":4") == (0, 4)
    assert _window("3") == (3, 4)


@pytest.mark.parametrize("window, kept", [("6:", [6, 8]), ("6:100", [6, 8]), ("7..7", [7, 8])])
def test_a_window_stops_at_the_last_micro_batch(capsys, tmp_path, window, kept):
    """tiny.astral: global batch 8, micro 1, dp 1: micro-batches 0..7."""
    out = tmp_path / "t.json"
    code, _, err = call(["forecast", str(TINY), "--trace", str(out), "--window", window],
                        capsys)
    assert code == 0, err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["otherData"]["window"] == kept
    mbs = {e["args"].get("micro_batch") for e in doc["traceEvents"] if e["ph"] == "X"}
    assert mbs - {None} == set(range(*kept))


@pytest.mark.parametrize("option", ["--trace", "--plot"])
def test_a_window_past_the_micro_batches_is_a_usage_error(capsys, tmp_path, option):
    """It wrote the optimizer step alone (a chart titled "micro-batches 8-9"), exit 0."""
    out = tmp_path / ("t.json" if option == "--trace" else "t.png")
    code, stdout, err = call(["forecast", str(TINY), option, str(out), "--window", "8:10"],
                             capsys)
    assert code == 2 and stdout == ""
    assert "--window 8:10: the job has 8 micro-batches per pipeline (0..7)" in err
    assert not out.exists()


@pytest.fixture(scope="module")
def tiny_design():
    import astral_dsl

    return astral_dsl.load(str(TINY))


def test_the_library_checks_a_window_as_the_cli_does(tiny_design):
    """tiny.astral: micro-batches 0..7. `fc.timeline(window=(8, 10))` returned the optimizer
    step alone in silence (the CLI's `--window 8:10` is a usage error), `(2, None)` (the CLI's
    `2:`) raised a TypeError, `(3, 1)` and `(-1, 2)` passed: one check, fitted_window, now."""
    from astral_dsl import seer

    fc = seer.forecast(tiny_design)
    with pytest.raises(ValueError, match=r"the job has 8 micro-batches per pipeline \(0\.\.7\)"
                                         ": the window holds none of them"):
        fc.timeline(window=(8, 10))
    for bad in ((3, 1), (-1, 2), (1.5, 3), "0..3", (1, 2, 3)):
        with pytest.raises(ValueError, match="a window is"):
            fc.timeline(window=bad)
    to_last = fc.timeline(window=(6, None))              # `6:`: micro-batches 6 and 7
    assert sorted(set(int(j) for j in to_last.mb)) == [0, 6, 7]     # (0: the optimizer's rows)
    past = fc.timeline(window=(6, 100))                   # past the end: stops at the last
    assert len(past.start) == len(to_last.start)
    assert {dict(ev.args).get("micro_batch") for ev in past} - {None} == {6, 7}


def test_an_option_none_forecasts_the_job_as_if_it_did_not_state_the_field(tiny_design,
                                                                          tmp_path):
    """tiny.astral states `recompute = full`: `recompute=None` was ignored like an omitted
    option (the forecast recomputed every layer); now it clears the field, the same forecast
    as the design without that line (recompute = none, the default: docs/api.md)."""
    import astral_dsl
    from astral_dsl import seer

    text = TINY.read_text(encoding="utf-8")
    assert text.count("  recompute = full\n") == 1
    unstated = tmp_path / "tiny.astral"
    unstated.write_text(text.replace("  recompute = full\n", ""), encoding="utf-8")
    want = seer.forecast(astral_dsl.load(str(unstated)))
    full = seer.forecast(tiny_design)
    cleared = seer.forecast(tiny_design, recompute=None)
    assert (full.job.recompute, cleared.job.recompute, want.job.recompute) == \
        ("full", "none", "none")
    assert cleared.iteration_time == want.iteration_time < full.iteration_time


def test_a_trace_too_large_names_a_window_that_fits(capsys, tmp_path, monkeypatch):
    """E704 said "choose a smaller --window or a coarser --level" and no more. tiny.astral at
    --level op: one micro-batch is 1,392 events (1,390 of its blocks, 2 of the iteration's
    optimizer and gradient reduction), each further one 1,390; with the limit at 4,172 =
    2 + 3 x 1,390, `--window 0:8` (2 + 8 x 1,390 = 11,122) is refused and 0:3 fits exactly;
    --level layer holds the whole window: 2 + 8 x 263 = 2,106."""
    from astral_dsl.outputs.forecast import trace

    monkeypatch.setattr(trace, "MAX_ASKED_EVENTS", 4_172)
    out = tmp_path / "t.json"
    code, stdout, err = call(["forecast", str(TINY), "--trace", str(out), "--window", "0:8"],
                             capsys)
    text = stdout + err                   # (the diagnostics go to stdout)
    assert code == 2 and not out.exists()
    assert "error[E704]: --trace: the trace of --window 0:8 at --level op would hold 11,122" \
        in text
    assert ("hint: --window 0:3 holds 4,172 events at --level op; --level layer holds 2,106 "
            "events of the window asked for") in text


def test_an_operator_table_prices_operators_by_their_trace_names(tiny_design, tmp_path):
    """tiny.astral: Llama 3 8B (hidden 4,096, 32 heads of 128) at tp 2, micro 1, seq 4,096.
    `out proj` (m = 4,096 tokens, n = 4,096, k = 4,096 / 2 = 2,048) was looked up as `out` and
    `flash attention` as `flash_fwd`: neither row priced anything. The attention's forward
    FLOPs: 2 x 1 x 16 heads x 4,096 rows x (128 + 128) x 2,048 mean keys = 68,719,476,736."""
    from astral_dsl import seer

    csv = tmp_path / "ops.csv"
    csv.write_text("operator,shape,dtype,time_ms\n"
                   "out proj,4096x4096x2048,bf16,7\n"
                   "flash attention,flops68719476736,,9\n"
                   "QKV,4096x6144x4096,bf16,1\n", encoding="utf-8")
    fc = seer.forecast(tiny_design, operator_table=str(csv))
    durations = {ev.name: ev.end - ev.start for ev in fc.timeline(window=(0, 1))
                 if ev.name in ("out proj", "flash attention")}
    assert durations == {"out proj": pytest.approx(7e-3), "flash attention": pytest.approx(9e-3)}
    assert (f"operator table {csv}: 2 of its 3 rows priced an operator of the forecast; "
            "priced nothing: line 4 (`QKV`, shape `4096x6144x4096`, bf16)") in fc.notes


def test_the_band_says_it_does_not_describe_measured_operators(tiny_design, tmp_path):
    """The error band is the calibration's spread of Seer's own costs: an operator table's
    times replace them for the operators it prices (here 2 rows: `out proj` and the forward
    attention of tiny.astral, as above), so the forecast says the band does not describe
    those (text, JSON, Envelope); without a table (or a table that priced nothing) nothing
    is added."""
    from astral_dsl import seer
    from astral_dsl.outputs.forecast.report import render, to_json

    csv = tmp_path / "ops.csv"
    csv.write_text("operator,shape,dtype,time_ms\nout proj,4096x4096x2048,bf16,7\n"
                   "flash attention,flops68719476736,,9\nnone,1x1x1,bf16,1\n", encoding="utf-8")
    fc = seer.forecast(tiny_design, operator_table=str(csv))
    env = fc.envelope()
    assert env.measured == 2 and to_json(fc)["calibration"]["measured_rows"] == 2
    # (and 2 GPUs, below the 8 of the smallest calibration run: W759, test_extrapolation.py)
    assert env.brief() == ("-21/+26 % (outside the calibrated envelope) (not the 2 "
                           "operator-table row(s)' operators) (extrapolated: gpus 2 (checked "
                           "8-1,024))")
    text = " ".join(render(fc).split())
    assert ("the band does not describe the operators the table's 2 row(s) priced: their "
            "measured times replaced Seer's costs, whose error it is") in text
    plain = seer.forecast(tiny_design)
    assert plain.envelope().measured == 0 and "measured_rows" not in to_json(plain)["calibration"]
    assert "does not describe" not in render(plain)


def test_an_operator_table_row_repeated_is_refused_with_both_lines(tmp_path):
    from astral_dsl import seer

    csv = tmp_path / "ops.csv"
    csv.write_text("operator,shape,dtype,time\nfc1,1x2x3,,1\nfc2,1x2x3,,1\nfc1,1x2x3,bf16,2\n",
                   encoding="utf-8")
    with pytest.raises(ValueError, match="line 4: repeats line 2's operator, shape and dtype "
                                         r"\(`fc1`, shape `1x2x3`, bf16\)"):
        seer.OperatorTable.read(str(csv))


def test_the_json_says_may_not_fit_as_the_table_does(tiny_design):
    """The table printed "may not fit in 85.9 GB (80 GiB)" and the JSON had no word of it nor
    the GPU's memory to compare with. H100 SXM: 80 GiB = 85.899 GB; tiny.astral's job needs
    78.3 +/- 1.8 GB at micro-batch 1 (fits), 84.3 +/- 2.4 GB at 3 (86.7 with the margin)."""
    from astral_dsl import seer
    from astral_dsl.outputs.forecast import report

    for micro, tight in ((1, False), (3, True)):
        fc = seer.forecast(tiny_design, micro=micro, global_batch=8 * micro)
        doc = report.to_json(fc)
        assert doc["gpu_memory_gb"] == pytest.approx(80 * 2 ** 30 / 1e9)
        over = doc["memory_gb"]["total"] + doc["memory_gb"]["uncertainty"] > doc["gpu_memory_gb"]
        assert doc["may_not_fit"] is over is tight
        assert ("may not fit in 85.9 GB (80 GiB)" in report.render(fc)) is tight


def test_a_job_without_a_placement_says_where_it_runs(tmp_path):
    """Site A holds 16 GPUs, B 64: the unplaced job of 32 ran on A (the first root) and was told
    E755 "its placement `A` holds 16", a placement its source never wrote; now W758 says so."""
    import astral_dsl

    path = tmp_path / "j.astral"
    path.write_text(
        "import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }\n"
        "site A { hosts = 2 x HGX8(gpu = H100_SXM, nic = CX7_400G) }\n"
        "site B { hosts = 8 x HGX8(gpu = H100_SXM, nic = CX7_400G) }\n"
        "model Tiny { layers = 12, hidden = 1024, heads = 8, vocab = 32000, seq = 1024,"
        " ffn = 4096 }\n"
        "job unplaced {\n"
        "  model = Tiny, gpus = 32\n"
        "  parallel { tp = 8, dp = 4 }\n"
        "  batch { global_batch = 8, micro = 1 }\n"
        "}\n", encoding="utf-8")
    design = astral_dsl.check(astral_dsl.compile(path))
    w = [d for d in design.diagnostics if d.code == "W758"]
    assert len(w) == 1
    assert w[0].message == ("job `unplaced` declares no `placement`: Seer runs it on `A`, the "
                            "design's first site")
    assert w[0].hint == "state where it runs: `placement = A` (a site, hall, pod or rows)"
    assert (w[0].span.start.line, w[0].span.start.column) == (5, 1)
    assert "E755" in [d.code for d in design.diagnostics]


@pytest.mark.parametrize("case, code, hint", [
    # Mixtral's 8 experts on tp x dp x cp = 2 x 48 x 1 = 96 ranks: ep in {1, 2, 4, 8} divides both
    ("ep_experts", "E753", "ep divides both the experts and tp x dp x cp = 96: ep = 1, 2, 4 or 8"),
    # 8,190 = 2 x 3^2 x 5 x 7 x 13: its divisors below the declared cp = 4 are 1, 2 and 3, of
    # which 2 x cp divides it for cp = 1 (no split) and 3 (8,190 / 6 = 1,365); not 2 (8,190 / 4)
    ("seq_cp", "E756", "each context-parallel rank holds two equal chunks of the sequence "
                       "(Transformer Engine's load-balanced causal split): cp = 1 or 3, or a "
                       "sequence that is a multiple of 8"),
    # 8,192 / (2 x 64) = 64 tokens a chunk < 128; cp <= 8,192 / 256 = 32 keeps 128 or more
    ("cp_tile", "W760", "chunks of at least 128 tokens: cp = 1, 2, 4, 8, 16 or 32, or a "
                        "sequence of at least 16,384"),
])
def test_a_degree_that_does_not_divide_says_which_would(case, code, hint):
    """E753 and E756 (the sequence over cp) came without a hint."""
    import astral_dsl
    from astral_dsl.seer import validate_jobs

    design = astral_dsl.load(Path(__file__).parent / "bad" / "jobs" / f"{case}.astral")
    assert [d.hint for d in validate_jobs(design) if d.code == code] == [hint]


def test_a_trace_under_a_scenario_names_it(tmp_path, capsys):
    """The trace of `forecast --scenario S` read as the healthy iteration's: its otherData
    named the job alone."""
    design = tmp_path / "tiny.astral"
    design.write_text(TINY.read_text(encoding="utf-8") + "\nscenario tor_gone {\n"
                      "  fail Tiny.fabric.rail[0].plane[A].tor\n}\n", encoding="utf-8")
    out = tmp_path / "t.json"
    every = shipped().bands["*"]          # the shipped bands: fit-exact.json's (exact refits)
    for scenario, named in (([], None), (["--scenario", "tor_gone"], "tor_gone")):
        code, _, err = call(["forecast", str(design), "--trace", str(out), "--level", "block"]
                            + scenario, capsys)
        assert code == 0, err
        other = json.loads(out.read_text(encoding="utf-8"))["otherData"]
        assert other.get("scenario") == named
        # how far to trust its time (it had the time alone): H100 bf16 Megatron-LM, outside
        # the calibrated envelope, the shipped every-run band (-0.101/+0.1216) twice as wide
        cal = other["calibration"]
        assert cal["inside"] is False and cal["band"] == [2 * every["low"], 2 * every["high"]]
        assert cal["outside"] == ["the combination H100/BF16/flash/dense/megatron"]


def test_the_charts_title_says_how_far_to_trust_the_time(tiny_design):
    """`--plot`'s title gave the iteration's time alone; it has its band (H100 bf16 Megatron-LM:
    outside the calibrated envelope, the shipped default -21/+26 %; on 2 GPUs, below the 8 of
    the smallest calibration run: W759)."""
    from astral_dsl import seer
    from astral_dsl.outputs.forecast.plot import title

    fc = seer.forecast(tiny_design)
    head = title(fc, None, 0.0, fc.iteration_time, 0.1)
    assert (f"{fc.iteration_time:.2f} s per iteration -21/+26 % (outside the calibrated "
            f"envelope) (extrapolated: gpus 2 (checked 8-1,024)), MFU") in head


def test_tokens_and_mfu_carry_the_times_band_inverted(tiny_design):
    """tokens/s, MFU and HFU were printed bare beside a -21/+26 % time: they go inversely with
    the time, so their band is the time's inverted: 1 / 1.2554 - 1 = -20.3 %, 1 / 0.7932 - 1 =
    +26.1 %: -20/+26 % (the outside band is twice every run's left-out spread, stop 68's exact
    refits -10.34/+12.77 %: -20.68/+25.54 %)."""
    from astral_dsl import seer
    from astral_dsl.outputs.forecast import report
    from astral_dsl.seer.envelope import inverse

    assert inverse((-0.2118, 0.2796)) == pytest.approx((-0.21851, 0.26871), abs=1e-5)
    # an inside band, e.g. -10.84/+14.20 % -> -12.43/+12.16 %
    assert inverse((-0.1084, 0.142)) == pytest.approx((-0.12434, 0.12158), abs=1e-5)
    fc = seer.forecast(tiny_design)
    text = report.render(fc)
    assert f"{fc.tokens_per_s:12,.0f}     -20/+26 %  the time's band, inverted" in text
    assert f"{fc.mfu * 100:12.1f} %   -20/+26 %  model FLOPs / bf16 peak, " in text


def test_an_iteration_under_a_second_is_shown_in_milliseconds(tiny_design):
    """One micro-batch of 4,096 tokens of Llama 3 8B on 2 GPUs takes a fraction of a second:
    the table printed it to the millisecond in seconds ("0.3xx s", a small model's "0.003 s")."""
    from astral_dsl import seer
    from astral_dsl.outputs.forecast import report

    fc = seer.forecast(tiny_design, global_batch=1)
    assert 0.01 < fc.iteration_time < 1
    text = report.render(fc)
    assert f"  iteration time   {fc.iteration_time * 1e3:11.3f} ms   " in text
    assert f"{fc.iteration_time:.3f} s" not in text


def test_options_with_nothing_to_act_on_say_so():
    """tp = 1, bf16, a dense model: sp, tp_overlap = full, fp8_recipe and ep_overlap changed
    nothing (lower.py reads sp and the TP overlap only with tp > 1, the recipe only for fp8,
    lower_comm.py the EP overlap only for an expert all-to-all) and no diagnostic said so."""
    import astral_dsl
    from astral_dsl.seer import validate_jobs

    case = Path(__file__).parent / "bad" / "jobs" / "options_without_tp_or_fp8.astral"
    found = sorted((d.span.start.line, d.span.start.column, d.message.split(":")[1].strip())
                   for d in validate_jobs(astral_dsl.load(case)) if d.code == "W751")
    assert found == [(7, 35, "sp has no effect with tp = 1"),
                     (9, 16, "tp_overlap has no effect with tp = 1"),
                     (9, 35, "fp8_recipe has no effect with dtype = bf16"),
                     (9, 57, "ep_overlap has no effect without expert parallelism (ep = 1, no "
                             "experts)")]


def test_torch_compile_outside_torchtitan_says_it_has_no_effect(tiny_design):
    """costs.set_framework runs eager kernels for torchtitan alone and lower_linear's dgrad sums
    arise only from torchtitan's separate linear layers: `torch_compile = true` under megatron
    or automodel forecast the same iteration, in silence. torchtitan's compiled step is faster
    (its norms, SwiGLU and rotary embeddings fused) and draws no W751."""
    from astral_dsl import seer

    for framework in ("megatron", "automodel", "torchtitan"):
        plain = seer.forecast(tiny_design, framework=framework, recompute="selective")
        compiled = seer.forecast(tiny_design, framework=framework, recompute="selective",
                                 torch_compile=True)
        w = [d.message for d in compiled.diagnostics if d.code == "W751"]
        if framework == "torchtitan":
            assert compiled.iteration_time < plain.iteration_time and w == []
        else:
            assert compiled.iteration_time == plain.iteration_time
            assert w == [f"job `two`: torch_compile has no effect with framework = {framework}: "
                         "its element-wise kernels are forecast fused without it"]


def test_the_json_keeps_the_forecasts_notes_beside_the_files_written(capsys, tmp_path):
    """`--format json --trace`: the forecast's own notes (here the scenario's) came back
    replaced by "trace written to ..." alone; both are kept, the forecast's first."""
    design = tmp_path / "tiny.astral"
    design.write_text(TINY.read_text(encoding="utf-8")
                      + "scenario port_b { fail Tiny.racks[0].hosts[0].nics[0].port[b] }\n",
                      encoding="utf-8")
    out = tmp_path / "t.json"
    code, stdout, err = call(["forecast", str(design), "--scenario", "port_b", "--format",
                              "json", "--trace", str(out)], capsys)
    assert code == 0, err
    assert json.loads(stdout)["notes"] == [
        "scenario `port_b`: Tiny.racks[0].hosts[0].nics[0].port[b] failed",
        f"trace written to {out}"]


def test_a_design_of_several_jobs_says_which_one_it_forecast(capsys, tmp_path):
    """Without `--job` the first job is forecast: the others were left out in silence; a note
    (standard error, the JSON's `notes`) names them. With `--job` nothing is said."""
    design = tmp_path / "two.astral"
    design.write_text(TINY.read_text(encoding="utf-8").replace("job two {", "job first {")
                      + TINY.read_text(encoding="utf-8").split("job two ", 1)[1].join(
                          ["job second ", ""]), encoding="utf-8")
    note = ("job `first` is the first of the design's 2 jobs: `--job NAME` forecasts another "
            "(second)")
    code, stdout, err = call(["forecast", str(design), "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["notes"] == [note]
    code, _, err = call(["forecast", str(design)], capsys)
    assert code == 0 and f"note: {note}\n" in err
    code, stdout, err = call(["forecast", str(design), "--job", "second", "--format", "json"],
                             capsys)
    assert code == 0 and "notes" not in json.loads(stdout), stdout


def test_a_job_without_a_global_batch_says_what_it_was_forecast_with(tmp_path):
    """No `batch`: Megatron-LM's default global batch, micro-batch x dp = 1 x 8 = 8 sequences
    of the model's 8,192 tokens (Llama 3 8B on tp 8, pp 2, dp 8: small.astral), one
    micro-batch per pipeline; it was taken in silence. A stated one says nothing."""
    import astral_dsl

    small = Path(__file__).parent / "fixtures" / "diagnose" / "small.astral"
    text = small.read_text(encoding="utf-8")
    path = tmp_path / "small.astral"
    path.write_text(text.replace("  batch { global_batch = 32, micro = 1, seq = 4096 }\n", ""),
                    encoding="utf-8")
    fc = astral_dsl.forecast(str(path)).detail
    assert (fc.job.global_batch, fc.job.microbatches, fc.job.seq) == (8, 1, 8192)
    assert ("global batch not stated: micro x dp = 1 x 8 = 8 sequences of 8,192 tokens "
            "(Megatron-LM's --global-batch-size default): state `batch { global_batch = ... }`"
            ) in fc.notes
    assert not [n for n in astral_dsl.forecast(str(small)).detail.notes if "global batch" in n]


@pytest.mark.parametrize("window", ["１:３", "٠..٢", "1_0:2_0", " 1:3"])
def test_a_window_is_ascii_digits(capsys, tmp_path, window):
    """int() took Unicode digits: `--window １:３` (fullwidth) drew micro-batches 1 and 2, and
    `1_0:2_0` was 10:20. A window is written in 0-9: anything else is a usage error naming it."""
    out = tmp_path / "t.json"
    code, stdout, err = call(["forecast", str(TINY), "--trace", str(out), "--window", window],
                             capsys)
    assert (code, stdout) == (2, "")
    assert f"astral: error: --window expects micro-batches A..B (or A..<B), got `{window}`" in err
    assert not out.exists()


@pytest.mark.parametrize("argv, said", [
    (["search", "F", "--top", "１"], "argument --top: `１` is not a whole number (digits 0-9)"),
    (["sweep", "F", "--grid", "hosts_per_rack=2", "--workers", "٢"],
     "argument --workers: `٢` is not a whole number (digits 0-9)"),
    (["render", "F", "--dpi", "７２"], "argument --dpi: `７２` is not a whole number (digits 0-9)"),
    (["synth", "F", "-o", "o.csv", "--seed", "1_0"],
     "argument --seed: `1_0` is not a whole number (digits 0-9)"),
    (["synth", "F", "-o", "o.csv", "--drift", "０.５"],
     "argument --drift: `０.５` is not a number (digits 0-9, a point)"),
    (["diagnose", "F", "--observed", "x", "--jobs", "２"],
     "argument --jobs: `２` is not a whole number (digits 0-9)"),
    (["lsp", "--timeout", "２０"], "argument --timeout: `２０` is not a number (digits 0-9, a point)"),
])
def test_every_numeric_option_is_ascii_digits(capsys, tmp_path, argv, said):
    """argparse's type=int and type=float took `１` (fullwidth) and `٢` (Arabic-Indic) as 1 and
    2, and `1_0` as 10: each option that takes a number (cli.common.whole, number) refuses
    them, naming itself."""
    argv = [str(TINY) if a == "F" else str(tmp_path / a) if a == "o.csv" else a for a in argv]
    code, stdout, err = call(argv, capsys)
    assert (code, stdout) == (2, "")
    assert f"astral: error: {said}\n" in err


def test_an_option_s_numbers_in_ascii_are_read_as_before():
    from astral_dsl.cli.common import number, whole

    assert [whole(t) for t in ("0", "12", "-3", "+4")] == [0, 12, -3, 4]
    assert [number(t) for t in ("1.5", ".5", "5.", "1e-3", "-2")] == [1.5, 0.5, 5.0, 0.001, -2.0]
    assert number("inf") == float("inf")       # (--timeout's own bounds refuse it)
