"""`astral sweep` writes each row as it comes, in grid order, and holds none of them (its memory
was ~29 KB a point: 100,000 points held ~3 GB until the end): `--format jsonl` and `-o` are
written while later points are still being evaluated, and every output has the bytes that
outputs/sweep.py's functions give for every row held (`astral_dsl.sweep`'s result)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from astral_dsl.cli import main
from astral_dsl.explore import sweep
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.outputs import sweep as out

from test_sweep_warning_points import LAB

ROOT = Path(__file__).resolve().parents[1]


def test_rows_are_written_while_later_points_are_evaluated(tmp_path, monkeypatch, capsys):
    path = tmp_path / "lab.astral"
    path.write_text(LAB, encoding="utf-8")
    written = []            # rows on standard output when each chunk of points starts

    def chunk(bundle, points, options):
        written.append(capsys.readouterr().out.count("\n"))
        return [{"valid": True, "metrics": {}, "diagnostics": []} for _ in points]

    monkeypatch.setattr(sweep, "evaluate_points", chunk)
    code = main(["sweep", str(path), "--grid", "n=1..4", "--grid", "util=1%..100%:1%",
                 "--format", "jsonl", "--workers", "1"])
    assert code == 0
    assert written[0] == 0
    assert sum(written) > 0, "no row was written before the last point was evaluated"
    rows = sum(written) + capsys.readouterr().out.count("\n")
    assert rows == 400


@pytest.mark.parametrize("design, grid", [
    ("lab", ["n=1..3", "util=50%,80%"]),
    # its first point has no cost (it fails before sizing), its second has: the rows wait for
    # the cost column to be known, then come with it
    ("examples/gb200_nvl72.astral", ["racks_per_su=1,8,2"]),
    ("examples/gb200_nvl72.astral", ["racks_per_su=1,2"]),     # priced, but no point is
])
def test_every_output_has_the_bytes_of_the_rows_held(tmp_path, capsys, design, grid):
    if design == "lab":
        (tmp_path / "lab.astral").write_text(LAB, encoding="utf-8")
        path = str(tmp_path / "lab.astral")
    else:
        path = str(ROOT / design)
    held = sweep.run(path, grid, engine=LocalEngine(1))
    args = ["sweep", path, *[a for g in grid for a in ("--grid", g)], "--workers", "1"]
    main(args + ["--format", "jsonl"])
    assert capsys.readouterr().out == out.jsonl(held, False)
    main(args + ["--format", "json", "-o", str(tmp_path / "rows.csv")])
    assert capsys.readouterr().out == out.document(held)
    assert (tmp_path / "rows.csv").read_text(encoding="utf-8") == out.csv_text(held, False)
    code = main(args + ["-o", str(tmp_path / "rows.jsonl")])
    valid = sum(r["valid"] for r in held.rows)
    assert capsys.readouterr().out == (f"{held.file}: {len(held.rows)} points ({valid} valid) "
                                       f"written to {tmp_path / 'rows.jsonl'}\n")
    assert (tmp_path / "rows.jsonl").read_text(encoding="utf-8") == out.jsonl(held, False)
    assert code == (0 if valid == len(held.rows) else 1)


def test_an_output_that_cannot_be_opened_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "lab.astral").write_text(LAB, encoding="utf-8")
    code = main(["sweep", str(tmp_path / "lab.astral"), "--grid", "n=1,2", "--workers", "1",
                 "-o", str(tmp_path / "no" / "rows.csv")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"-o: cannot write `{tmp_path / 'no' / 'rows.csv'}`: there is no folder " \
           f"`{tmp_path / 'no'}`" in err
    assert "Traceback" not in err
    assert not os.path.exists(tmp_path / "no")


@pytest.mark.parametrize("fmt", [[], ["--format", "jsonl"]])
def test_an_interrupted_sweep_says_its_output_holds_the_first_rows_only(tmp_path, monkeypatch,
                                                                        capsys, fmt):
    """Ctrl-C in the middle of a sweep into -o (and --format jsonl): exit 130, as before, and
    stderr says the rows written are the first points' only, how many of how many; the file
    cut at a row read as a whole sweep's, and nothing said so."""
    path = tmp_path / "lab.astral"
    path.write_text(LAB, encoding="utf-8")
    chunks = []

    def chunk(bundle, points, options):
        chunks.append(len(points))
        if len(chunks) == sweep.ROUND + 2:          # in the second round of chunks
            raise KeyboardInterrupt
        return [{"valid": True, "metrics": {}, "diagnostics": []} for _ in points]

    monkeypatch.setattr(sweep, "evaluate_points", chunk)
    rows = tmp_path / "rows.jsonl"
    code = main(["sweep", str(path), "--grid", "n=1..4", "--grid", "util=1%..100%:1%",
                 "--workers", "1", "-o", str(rows), *fmt])
    captured = capsys.readouterr()
    done = sum(chunks[:sweep.ROUND])             # the first round's rows
    assert code == 130
    assert rows.read_text(encoding="utf-8").count("\n") == done
    assert captured.out.count("\n") == (done if fmt else 0)
    where = f"-o {rows} and standard output hold" if fmt else f"-o {rows} holds"
    assert captured.err.endswith(f"astral: sweep interrupted after {done:,} of 400 points: "
                                 f"{where} the rows of the first {done:,} only, not the "
                                 f"whole sweep\n")


def test_an_output_that_is_a_file_the_design_reads_is_a_usage_error(tmp_path, capsys,
                                                                     monkeypatch):
    """-o is opened before the first point: `-o fleet.csv` of a design whose inventory is
    fleet.csv emptied it (the sweep wrote its rows there, the inventory gone); now a usage
    error, as `astral report` refuses to write over a module, and the file is untouched."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "d.astral").write_text(
        'param n = 2\nhost H { power = 1 kW, name = "h{host}" }\nrack R { hosts = n x H }\n'
        'site S { racks = 1 x R, utilization = 75 % }\n'
        'inventory Fleet { file = "fleet.csv" }\n', encoding="utf-8")
    fleet = "name,serial\nh0,A1\nh1,B2\n"
    (tmp_path / "fleet.csv").write_text(fleet, encoding="utf-8")
    code = main(["sweep", "d.astral", "--grid", "n=2,3", "--workers", "1", "-o", "fleet.csv"])
    err = capsys.readouterr().err
    assert code == 2
    assert (f"-o fleet.csv is `{tmp_path / 'fleet.csv'}` (the same file) that this command "
            "reads: writing it would destroy it" in err)
    assert (tmp_path / "fleet.csv").read_text(encoding="utf-8") == fleet
    assert main(["sweep", "d.astral", "--grid", "n=2,3", "--workers", "1",
                 "-o", "rows.csv"]) == 0
