"""Same input, same output, byte for byte, wherever the package is installed: a stdlib file is
named `stdlib/power.astral` in every output (resources.stdlib_name), and what reads the file
again (the terminal's snippets) finds the installed one by that name (resources.source_file).
Before, run outside the checkout or from a pip install, a diagnostic whose span or related span
stood in the stdlib named it by its absolute path (`/work/main/stdlib/power.astral`,
`.../site-packages/astral_dsl/stdlib/power.astral`), so one design gave different bytes on two
machines: the terminal's and JSON's diagnostics, the export's instance sources, the review
page, `--margins`, the forecast's and the sizing's JSON."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import astral_dsl
from astral_dsl import resources
from astral_dsl.semantics.modules import display_name
from clirun import REPO, astral, astral_runs

# the tutorial's rack without its `allow W216`: its warnings' related spans stand in
# stdlib/power.astral and stdlib/cooling.astral
DESIGN = "".join(line for line in (REPO / "examples" / "tutorial_rack.astral")
                 .read_text(encoding="utf-8").splitlines(keepends=True)
                 if not line.startswith("allow "))

COMMANDS = (("check", "d.astral", "--color", "never"),
            ("check", "d.astral", "--format", "json"),
            ("export", "d.astral"),
            ("diff", "d.astral", "d.astral", "--format", "json"))


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "d.astral").write_text(DESIGN, encoding="utf-8")
    return project


def _line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


def _outputs(project: Path, stdlib: Path, monkeypatch):
    """The commands' exit codes and output with the stdlib at `stdlib` (in this process)."""
    monkeypatch.setattr(resources, "stdlib_dir", lambda: stdlib)
    out = []
    for args in COMMANDS:
        p = astral(*args, cwd=project)
        out.append((p.returncode, p.stdout, p.stderr))
    return out


def test_the_same_design_gives_the_same_bytes_with_the_stdlib_at_two_paths(tmp_path, monkeypatch):
    project = _project(tmp_path)
    first, second = tmp_path / "a" / "deep" / "stdlib", tmp_path / "b" / "stdlib"
    for folder in (first, second):
        shutil.copytree(resources.stdlib_dir(), folder)
    one = _outputs(project, first, monkeypatch)
    two = _outputs(project, second, monkeypatch)
    assert one == two
    human, as_json, export, _ = [stdout for _, stdout, _ in one]
    for stdout in (human, as_json, export):
        assert str(tmp_path / "a") not in stdout and "stdlib/power.astral" in stdout
    # the snippet of the related span is read from the stdlib in use, by its canonical name
    power = (first / "power.astral").read_text(encoding="utf-8")
    line = _line_of(power, "  load_loss = rating")
    assert f"--> stdlib/power.astral:{line}:15\n" in human
    assert f"\n{line} |   load_loss = rating * 0.5" in human
    related = [r for d in json.loads(as_json)["diagnostics"] for r in d.get("related", ())]
    assert {r["file"] for r in related} == {"stdlib/power.astral", "stdlib/cooling.astral"}


def test_the_same_bytes_from_a_checkout_and_a_wheels_layout_elsewhere(tmp_path):
    """A real `python -m astral_dsl.cli` of the package copied to two other folders: laid out as
    the checkout is (stdlib/ beside the package) and as a wheel installs it (stdlib/ inside
    it), run from the design's folder; and this checkout's, run in this process."""
    project = _project(tmp_path)
    checkout, wheel = tmp_path / "one" / "checkout", tmp_path / "two" / "site-packages"
    for name in ("astral_dsl", "stdlib", "grammar", "schema"):
        shutil.copytree(REPO / name, checkout / name)
        shutil.copytree(REPO / name, wheel / "astral_dsl" / name if name != "astral_dsl"
                        else wheel / name, dirs_exist_ok=True)
    outputs = []
    for root in (checkout, wheel):
        env = dict(os.environ, PYTHONPATH=str(root))
        runs = astral_runs(COMMANDS[:2], cwd=project, env=env)
        outputs.append([(p.returncode, p.stdout.decode()) for p in runs])
    here = [(p.returncode, p.stdout) for p in (astral(*args, cwd=project) for args in COMMANDS[:2])]
    assert outputs[0] == outputs[1] == here
    assert "--> stdlib/power.astral:" in here[0][1] and '"file":"stdlib/power.astral"' in here[1][1]


def test_a_stdlib_file_has_one_name_from_any_working_directory(tmp_path, monkeypatch):
    power = resources.stdlib_dir() / "power.astral"
    climate = next((resources.stdlib_dir() / "climate").glob("*.CSV"))
    for cwd in (REPO, REPO / "stdlib", tmp_path):
        monkeypatch.chdir(cwd)
        assert display_name(power) == "stdlib/power.astral"
        assert display_name(climate) == f"stdlib/climate/{climate.name}"
        assert resources.source_file("stdlib/power.astral") == power.resolve()
        assert resources.source_file(f"stdlib/climate/{climate.name}") == climate.resolve()


def test_a_users_own_file_in_a_folder_named_stdlib_is_not_taken_for_the_stdlibs(tmp_path):
    """Below the working directory, the user's `stdlib/power.astral` is `./stdlib/power.astral`:
    its diagnostics show its own lines, and the shipped file's related spans show the
    shipped file's (one name for two files would have read one file for both)."""
    own = tmp_path / "stdlib" / "power.astral"
    own.parent.mkdir()
    own.write_text(DESIGN, encoding="utf-8")
    out = astral("check", "stdlib/power.astral", "--color", "never", cwd=tmp_path)
    shipped = (resources.stdlib_dir() / "power.astral").read_text(encoding="utf-8")
    line, mine = _line_of(shipped, "  load_loss = rating"), _line_of(DESIGN, "transformer mv")
    assert f"--> ./stdlib/power.astral:{mine}:15\n" in out.stdout
    assert f" {mine} |   transformer mv = Transformer(" in out.stdout
    assert f"--> stdlib/power.astral:{line}:15\n" in out.stdout
    assert f"\n{line} |   load_loss = rating * 0.5" in out.stdout


def _stdlib_warning(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the stdlib in use whose power.astral has a warning of its own (W214, at a
    declaration), and the design's project, whose root is above the working directory
    (`sub/`): the working directory's folder, returned."""
    stdlib = tmp_path / "installed" / "stdlib"
    shutil.copytree(resources.stdlib_dir(), stdlib)
    with open(stdlib / "power.astral", "a", encoding="utf-8") as fh:
        fh.write("\ngpu abs { power = 700 W }\n")
    monkeypatch.setattr(resources, "stdlib_dir", lambda: stdlib)
    project = _project(tmp_path)
    (project / "astral.toml").write_text("", encoding="utf-8")
    (project / "sub").mkdir()
    return project / "sub"


def test_a_warning_in_a_stdlib_file_is_named_alike_by_check_diff_and_a_baseline(tmp_path,
                                                                               monkeypatch):
    """Its primary span in the stdlib: the terminal shows the installed file's line; `diff`
    names it as `check` does (not relative to the project: `sub/stdlib/power.astral` from a
    folder of the project); a baseline file keeps its name (neither made relative to the
    baseline's folder nor absolute), and accepts it run from another folder."""
    cwd = _stdlib_warning(tmp_path, monkeypatch)
    line = _line_of((resources.stdlib_dir() / "power.astral").read_text(encoding="utf-8"),
                    "gpu abs {")
    out = astral("check", "../d.astral", "--color", "never", cwd=cwd)
    assert f"--> stdlib/power.astral:{line}:5\n" in out.stdout
    assert f"{line} | gpu abs {{ power = 700 W }}" in out.stdout
    (cwd.parent / "e.astral").write_text("gpu G { power = 700 W }\nhost H { gpus = 8 x G }\n"
                                         "site S { hosts = 1 x H }\n", encoding="utf-8")
    diff = json.dumps(json.loads(astral("diff", "../d.astral", "../e.astral", "--format",
                                        "json", cwd=cwd).stdout))
    assert '"stdlib/power.astral"' in diff and "W214" in diff and "sub/stdlib" not in diff
    monkeypatch.chdir(cwd)                      # and astral_dsl.diff, as the command's
    api = json.dumps(astral_dsl.diff("../d.astral", "../e.astral").json())
    assert '"stdlib/power.astral"' in api and "W214" in api and "sub/stdlib" not in api
    (cwd.parent / "ci").mkdir()
    out = astral("check", "../d.astral", "--write-baseline", "../ci/accepted.json", cwd=cwd)
    assert out.returncode == 0, out.stdout + out.stderr
    written = json.loads((cwd.parent / "ci" / "accepted.json").read_text(encoding="utf-8"))
    assert "stdlib/power.astral" in json.dumps(written) and str(tmp_path) not in json.dumps(written)
    again = json.loads(astral("check", "d.astral", "--baseline", "ci/accepted.json",
                              "--format", "json", cwd=cwd.parent).stdout)
    assert [d["code"] for d in again["diagnostics"]] == []
    assert "W214" in {a["code"] for a in again["accepted"]}


def test_a_baseline_writes_a_users_own_stdlib_folder_so_that_it_reads_back_as_its_own(
        tmp_path):
    """A user's file in a folder named `stdlib` beside the baseline is written `./stdlib/...`,
    which is read back as that file, not the stdlib's."""
    from astral_dsl.model.baseline import restored, stored

    folder = str(tmp_path / "ci")
    own = str(tmp_path / "ci" / "stdlib" / "power.astral")
    assert stored(own, folder) == "./stdlib/power.astral"
    assert restored("./stdlib/power.astral", folder) == own
    assert restored("stdlib/power.astral", folder) == "stdlib/power.astral"


def test_a_baseline_written_before_stdlib_files_had_one_name_still_accepts_their_warnings(
        tmp_path, monkeypatch):
    """A baseline written by an earlier astral named a stdlib file by its path relative to the
    baseline's folder (`../installed/stdlib/power.astral`, the absolute path made relative):
    read back, it names the stdlib file by its one name again, and accepts its warning (it was
    read as a file of the user's: the warning, accepted before the upgrade, was reported)."""
    cwd = _stdlib_warning(tmp_path, monkeypatch)
    (cwd.parent / "ci").mkdir()
    baseline = cwd.parent / "ci" / "accepted.json"
    out = astral("check", "../d.astral", "--write-baseline", str(baseline), cwd=cwd)
    assert out.returncode == 0, out.stdout + out.stderr
    old = os.path.relpath(resources.stdlib_dir() / "power.astral", baseline.parent)
    text = baseline.read_text(encoding="utf-8")
    assert '"stdlib/power.astral"' in text
    baseline.write_text(text.replace('"stdlib/power.astral"', json.dumps(old)),
                        encoding="utf-8")
    again = json.loads(astral("check", "d.astral", "--baseline", "ci/accepted.json",
                              "--format", "json", cwd=cwd.parent).stdout)
    assert [d["code"] for d in again["diagnostics"]] == []
    assert "W214" in {a["code"] for a in again["accepted"]}
