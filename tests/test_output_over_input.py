"""A file a command writes is never one it reads (README, "Security": an output never replaces
an input): `-o` of calibrate, diagnose and report, `forecast --ranks` and `--trace` and `check
--write-baseline` naming the design (or a module it imports), a runs table, the --gpu-file, the --operator-table, an
--observed file or a file of an --observed folder, by its path, a symbolic link or a hard link,
is a usage error before anything is read or written."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from test_cli import call

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "examples" / "single_pod.astral"


@pytest.fixture
def design(tmp_path) -> Path:
    path = tmp_path / "design.astral"
    shutil.copyfile(DESIGN, path)
    return path


def _refused(capsys, argv, kept: Path, named: str):
    before = kept.read_bytes()
    code, out, err = call([str(a) for a in argv], capsys)
    assert code == 2, (out, err)
    assert f"is {named} that this command reads: writing it would destroy it; name another " \
           f"file" in err, err
    assert kept.read_bytes() == before


def test_report_forecast_and_check_do_not_write_over_the_design(design, capsys, tmp_path):
    # `astral report d.astral -o d.astral` replaced the design with the page (exit 0)
    _refused(capsys, ["report", design, "-o", design], design, "a file")
    _refused(capsys, ["forecast", design, "--ranks", design], design, "a file")
    _refused(capsys, ["forecast", design, "--trace", design], design, "a file")
    _refused(capsys, ["check", design, "--write-baseline", design], design, "a file")
    table = tmp_path / "ops.csv"
    table.write_text("operator,shape,dtype,time_ms\n", encoding="utf-8")
    _refused(capsys, ["forecast", design, "--operator-table", table, "--trace", table], table,
             "a file")


def test_nor_through_a_link_or_a_hard_link(design, capsys, tmp_path):
    link, hard = tmp_path / "link.html", tmp_path / "hard.html"
    link.symlink_to(design)
    os.link(design, hard)
    for out in (link, hard):
        _refused(capsys, ["report", design, "-o", out], design,
                 f"`{design}` (the same file)")


def test_the_api_report_does_not_write_over_what_it_reads(design, tmp_path):
    """`astral_dsl.report(path, output=path)` replaced the design with the page (the command
    line refused it): a ValueError now, before any work, for the design, a module it imports
    and the fit file, by path, link or hard link; nothing is written."""
    import astral_dsl

    part = tmp_path / "part.astral"
    part.write_text("host Extra { power = 1 kW }\n", encoding="utf-8")
    design.write_text("import part { Extra }\n" + design.read_text(encoding="utf-8"),
                      encoding="utf-8")
    fit = tmp_path / "fit.json"
    fit.write_text("{}", encoding="utf-8")
    link, hard = tmp_path / "link.html", tmp_path / "hard.html"
    link.symlink_to(design)
    os.link(design, hard)
    for target in (design, astral_dsl.compile(design)):
        for out, kept, named in ((design, design, "a file"),
                                 (link, design, f"`{design}` (the same file)"),
                                 (hard, design, f"`{design}` (the same file)"),
                                 (part, part, "a file"), (fit, fit, "a file")):
            before = kept.read_bytes()
            with pytest.raises(ValueError) as exc:
                astral_dsl.report(target, out, calibration=fit)
            assert str(exc.value) == (f"output {out} is {named} that report reads: writing it "
                                      f"would destroy it; name another file")
            assert kept.read_bytes() == before


def test_diagnose_does_not_write_over_its_observed_data(design, capsys, tmp_path):
    log = tmp_path / "run.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n0,1,forward,0,1,,\n",
                   encoding="utf-8")
    _refused(capsys, ["diagnose", design, "--observed", log, "-o", log], log, "a file")
    _refused(capsys, ["diagnose", design, "--observed", tmp_path, "-o", log], log,
             f"a file of `{tmp_path}`")
    _refused(capsys, ["diagnose", design, "--observed", log, "-o", design], design, "a file")


def test_calibrate_does_not_write_the_fit_over_a_table_or_the_gpu_file(design, capsys,
                                                                       tmp_path):
    table = tmp_path / "runs.csv"      # two rows of the A100 table: no fit needed to refuse
    rows = (REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv").read_text(
        encoding="utf-8").splitlines(keepends=True)[:3]
    table.write_text("".join(rows), encoding="utf-8")
    _refused(capsys, ["calibrate", table, "-o", table], table, "a file")
    _refused(capsys, ["calibrate", table, "--gpu-file", design, "-o", design], design, "a file")


def test_an_output_beside_the_inputs_is_written(design, capsys, tmp_path):
    page = tmp_path / "page.html"
    page.write_text("old", encoding="utf-8")
    code, out, err = call(["report", str(design), "-o", str(page)], capsys)
    assert code in (0, 1), err
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    hidden = tmp_path / ".page.html"           # --observed reads no hidden file of a folder
    log = tmp_path / "run.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n", encoding="utf-8")
    hidden.write_text("old", encoding="utf-8")
    code, out, err = call(["diagnose", str(design), "--observed", str(tmp_path), "-o",
                           str(hidden)], capsys)
    assert "would destroy it" not in err



def test_a_baseline_beside_the_design_is_written(design, tmp_path, capsys):
    accepted = tmp_path / "accepted.json"
    accepted.write_text("{}", encoding="utf-8")
    code, out, err = call(["check", str(design), "--write-baseline", str(accepted)], capsys)
    assert code == 0, err
    assert accepted.read_text(encoding="utf-8").startswith('{"astral_baseline":1')


def test_nor_over_a_module_the_design_imports(capsys, tmp_path):
    # `astral report main.astral -o lib.astral`, main importing lib, replaced the module with
    # the page (exit 0): the files the design is compiled from are its imports too
    lib = tmp_path / "lib.astral"
    lib.write_text("param hpr = 4\n", encoding="utf-8")
    text = DESIGN.read_text(encoding="utf-8")
    main = tmp_path / "main.astral"
    main.write_text("import lib { hpr }\n" + text, encoding="utf-8")
    log = tmp_path / "run.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n0,1,forward,0,1,,\n",
                   encoding="utf-8")
    named = "a file"
    _refused(capsys, ["report", main, "-o", lib], lib, named)
    _refused(capsys, ["forecast", main, "--ranks", lib], lib, named)
    _refused(capsys, ["forecast", main, "--trace", lib], lib, named)
    _refused(capsys, ["diagnose", main, "--observed", log, "-o", lib], lib, named)
    _refused(capsys, ["check", main, "--write-baseline", lib], lib, named)


def test_nor_over_the_file_a_link_of_an_observed_folder_leads_to(design, capsys, tmp_path):
    # --observed DIR reads DIR/link.csv, a link to a log elsewhere: `-o DIR/link.csv` would
    # write the diagnosis over that log (the folder was compared by where the link leads)
    elsewhere, folder = tmp_path / "elsewhere", tmp_path / "run"
    elsewhere.mkdir()
    folder.mkdir()
    log = elsewhere / "run.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n0,1,forward,0,1,,\n",
                   encoding="utf-8")
    (folder / "link.csv").symlink_to(log)
    _refused(capsys, ["diagnose", design, "--observed", folder, "-o", folder / "link.csv"], log,
             f"a file of `{folder}`")
