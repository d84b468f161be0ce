"""`astral diff A B`: hand-made pairs, one per kind of change, against their expected output
(tests/fixtures/diff/CASE: a.astral, b.astral, `args` when the case needs its own arguments,
`expected` the output, `exit` the exit code; `ASTRAL_UPDATE_FIXTURES=1` rewrites `expected` and
`exit` after a deliberate change, to be reviewed in the diff), git revisions in a temporary
repository (imports resolved in the same revision), exit codes and colours."""
from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import astral_dsl
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "fixtures" / "diff"
UPDATE = os.environ.get("ASTRAL_UPDATE_FIXTURES") == "1"


def astral(*args, cwd=REPO, env=None):
    return _astral_cli(*args, cwd=cwd, env=env)


def _args(case: Path):
    f = case / "args"
    return f.read_text(encoding="utf-8").split("\n")[:-1] if f.exists() else ["a.astral",
                                                                             "b.astral"]


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_case(case):
    folder = CASES / case
    proc = astral("diff", *_args(folder), "--color", "never", cwd=folder)
    assert not proc.stderr, proc.stderr
    if UPDATE:
        (folder / "expected").write_text(proc.stdout, encoding="utf-8")
        (folder / "exit").write_text(f"{proc.returncode}\n", encoding="utf-8")
    assert proc.stdout == (folder / "expected").read_text(encoding="utf-8")
    assert proc.returncode == int((folder / "exit").read_text())


def test_the_cases_cover_every_section():
    """One pair per kind of change: every section of the output is some case's."""
    from astral_dsl.outputs.diff.facts import SECTION_TITLES

    seen = {line for case in CASES.iterdir() if case.is_dir()
            for line in (case / "expected").read_text(encoding="utf-8").splitlines()}
    for title in SECTION_TITLES.values():
        assert title in seen, title
    texts = "\n".join((c / "expected").read_text(encoding="utf-8") for c in CASES.iterdir())
    assert "\n  + " in texts and "\n  - " in texts and "\n  ~ " in texts


def test_hand_computed_figures():
    counts = (CASES / "counts" / "expected").read_text(encoding="utf-8")
    # two racks of 4 servers x 8 GPUs; 8 x 10.2 kW = 81.6 kW peak, 75 % of it on average
    assert "~ gpus: 32 -> 64 (+32, +100.0 %)" in counts
    assert "~ it_power_kw: 40.8 -> 81.6 (+40.8, +100.0 %)" in counts
    assert "~ it_power_avg_kw: 30.6 -> 61.2 (+30.6, +100.0 %)" in counts
    power = (CASES / "power" / "expected").read_text(encoding="utf-8")
    # 4 x 10.2 kW x 60 % = 24.48 kW
    assert "~ it_power_avg_kw: 30.6 -> 24.48 (-6.12, -20.0 %)" in power
    bom = (CASES / "bom" / "expected").read_text(encoding="utf-8")
    # ToR-Agg links of the pod: 8 rails x 2 planes x 8 ToRs x 32 uplinks = 4,096, now on
    # single-mode optics: the same number of fibres and modules, of another kind
    assert "- fibre SR4_400G (tor-agg links, 400 Gb/s, 60 m): 4,096" in bom
    assert "+ fibre DR4_400G (tor-agg links, 400 Gb/s, 60 m): 4,096" in bom


def test_computed_values_are_rounded_as_the_figures_are():
    """A value the stdlib computes (a transformer's losses from its rating) was printed to 10
    significant digits (`1.906090889 kW`); now to the 6 the diff's figures have."""
    computed = (CASES / "computed" / "expected").read_text(encoding="utf-8")
    # 250 kVA: 99.23 % at 225 kVA and 99.27 % at 300 kVA, 99.2433 % between; the load loss is
    # twice the half-load loss, 250 kVA x 0.5 x (1 / 0.992433 - 1) x 2 = 1.90609 kW (P0 a
    # quarter of it); 200 kVA: 99.16 % at 150 kVA, 99.2067 % at 200 kVA
    eff_a = 0.9923 + (250 - 225) / 75 * 0.0004
    eff_b = 0.9916 + (200 - 150) / 75 * 0.0007
    a, b = 250 * (1 / eff_a - 1), 200 * (1 / eff_b - 1)
    assert f"~ S.mv.load_loss: {a:.6g} kW -> {b:.6g} kW" in computed
    assert f"~ S.mv.no_load_loss: {a / 4:.6g} kW -> {b / 4:.6g} kW" in computed
    assert "~ S.mv.load_loss: 1.90609 kW -> 1.59935 kW" in computed
    # what the values are is compared in full: a change past the 6th digit is still one
    from astral_dsl.outputs.diff.facts import rounded
    assert [rounded(x) for x in (1.906090889, 65536.0, 1234.56789, 0.4765227, 2.5, -0.0001234567,
                                 float("inf"))] == \
        ["1.90609", "65536", "1234.6", "0.476523", "2.5", "-0.000123457", "inf"]


def test_json_agrees_with_the_comparison():
    doc = json.loads((CASES / "json" / "expected").read_text(encoding="utf-8"))
    assert doc["identical"] is False and doc["a"]["valid"] and doc["b"]["valid"]
    assert doc["changes"] == {"values": [{"key": "S.busway.capacity", "kind": "changed",
                                          "before": "45 kW", "after": "50 kW"}]}


def test_fifth_host_per_rack_is_one_command():
    proc = astral("diff", "examples/astral.astral", "examples/astral.astral", "--set-b",
                  "hosts_per_rack=5", "--format", "json")
    assert proc.returncode == 1                      # B has errors
    doc = json.loads(proc.stdout)
    counts = {c["key"]: c for c in doc["changes"]["counts"]}
    # 8 pods x 128 rows x 16 racks x 5 hosts x 8 GPUs
    assert counts["gpus"]["before"] == 524288 and counts["gpus"]["after"] == 655360
    appeared = {c["after"]["code"] for c in doc["changes"]["diagnostics"] if c["kind"] == "added"}
    assert {"E500", "E621", "E640", "E604"} <= appeared
    assert doc["b"]["label"] == "examples/astral.astral --set-b hosts_per_rack=5"


def test_an_override_of_one_side_is_named_by_its_own_flag(tmp_path):
    """A value given by --set-a (--set-b) is named `--set-a NAME` in its side's diagnostics:
    they were merged with --set's before compiling, and said `--set NAME`, an option the
    command was not given for it."""
    design = tmp_path / "d.astral"
    design.write_text('param servers = 4\nparam label = "x"\nhost H { power = 10 kW }\n'
                      'rack R { hosts = servers x H }\nsite S { racks = 2 x R }\n')
    for extra in ((), ("--set-b", "label=\"y\"")):     # B has its own `label`: A has --set's
        proc = astral("diff", design, design, "--set", "label=North", "--set-a", "servers=zz",
                      "--set-b", "nope=3", *extra, "--format", "json")
        assert proc.returncode == 1, proc.stderr
        said = {(d["code"], d["message"].split(":")[0])
                for d in json.loads(proc.stdout)["diagnostics"]}
        assert said == {("E310", "--set-a servers"), ("E213", "--set-b nope"),
                        ("E310", "--set label")}, said     # --set: both sides', as before
    # a hint's example too, and for the shell as --set's
    proc = astral("diff", design, design, "--set-a", "label=4", "--format", "json")
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["hint"] == 'give a string in double quotes, e.g. `--set-a \'label="x"\'`'
    proc = astral("diff", design, design, "--set-b", "label=North", "--format", "json")
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["hint"] == '`label` is text: quote its value, --set-b \'label="North"\''


def test_a_sides_label_names_each_value_by_the_option_that_gave_it(tmp_path):
    """The label of a side (`--- a: FILE ...`, JSON's `label`) named every value `--set k=v`,
    one given by --set-a or --set-b too; each is named by its own option now, quoted as a
    shell takes it (a value with a space is one argument)."""
    design = tmp_path / "d.astral"
    design.write_text('param servers = 4\nparam label = "x"\nparam limit = 45 kW\n'
                      'host H { power = 10 kW }\nrack R { hosts = servers x H }\n'
                      'site S { racks = 2 x R }\n')
    given = ("--set", "servers=3", "--set-a", 'label="a b"', "--set-b", "servers=5",
             "--set-b", "limit=50 kW")
    proc = astral("diff", design, design, *given, "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["a"]["label"] == f"{design} --set servers=3 --set-a 'label=\"a b\"'"
    assert doc["b"]["label"] == f"{design} --set-b servers=5 --set-b 'limit=50 kW'"
    text = astral("diff", design, design, *given).stdout.split("\n")
    assert text[0].startswith(f"--- a: {design} --set servers=3 --set-a 'label=\"a b\"' [")
    assert text[1].startswith(f"+++ b: {design} --set-b servers=5 --set-b 'limit=50 kW' [")


def test_json_diagnostics_name_the_file_of_their_side():
    # the facts name a side's entry file "" (so that a problem on both sides compares equal):
    # the JSON said `"file": ""`; a diagnostic that appears is B's, one that goes away is A's
    a, b = CASES / "errors" / "a.astral", CASES / "errors" / "b.astral"
    for first, second, kind in ((a, b, "added"), (b, a, "removed")):
        proc = astral("diff", first, second, "--format", "json")
        changes = json.loads(proc.stdout)["changes"]["diagnostics"]
        assert {c["kind"] for c in changes} == {kind} and len(changes) >= 2
        side = "after" if kind == "added" else "before"
        # named as the compiler names a file under the working directory: relative to it
        assert {c[side]["file"] for c in changes} == {str(b.relative_to(REPO))}, changes
        assert all(c["after" if kind == "removed" else "before"] is None for c in changes)


def test_exit_codes(tmp_path):
    a = CASES / "param" / "a.astral"
    assert astral("diff", str(a), str(a)).returncode == 0
    assert astral("diff", str(a), str(a), "--exit-code").returncode == 0
    assert astral("diff", str(a), str(CASES / "param" / "b.astral"),
                  "--exit-code").returncode == 1
    assert astral("diff", str(a), str(CASES / "errors" / "b.astral")).returncode == 1
    missing = astral("diff", str(a), str(tmp_path / "nope.astral"))
    assert missing.returncode == 2 and "E100" in missing.stderr
    bad = astral("diff", str(a), str(a), "--set-b", "servers")
    assert bad.returncode == 2 and "NAME=VALUE" in bad.stderr
    assert astral("diff", str(a)).returncode == 2


def _on_a_terminal(args, env):
    """The command's output with its standard output on a pseudo-terminal."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "astral_dsl.cli", *args], stdout=slave,
                                stderr=subprocess.PIPE, cwd=REPO, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=300)
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8")


def test_colours_on_a_terminal_and_no_color():
    args = ["diff", str(CASES / "diagnostics" / "a.astral"),
            str(CASES / "diagnostics" / "b.astral")]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    shown = _on_a_terminal(args, env)
    assert "\x1b[32m+ warning[W500]" in shown and "\x1b[31m- warning[W500]" in shown
    assert "\x1b[" not in _on_a_terminal(args, dict(env, NO_COLOR="1"))
    assert "\x1b[" not in _on_a_terminal(args + ["--color", "never"], env)
    assert "\x1b[32m" in astral(*args, "--color", "always").stdout


def test_design_text_cannot_drive_the_terminal(tmp_path):
    a = (CASES / "param" / "a.astral").read_text(encoding="utf-8")
    b = a.replace("  facility water", '  check gpus == 64 else warning "\x1b]52;c;AAAA\x07 hi"\n'
                  "  facility water")
    (tmp_path / "a.astral").write_text(a, encoding="utf-8")
    (tmp_path / "b.astral").write_text(b, encoding="utf-8")
    out = astral("diff", "a.astral", "b.astral", cwd=tmp_path).stdout
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]52;c;AAAA\\x07 hi" in out


# -- git revisions -------------------------------------------------------------------------------

def _git(repo: Path, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
               GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


MAIN = """\
import lib.parts { Server }
param servers = 4
rack Rack { hosts = servers x Server }
site S { racks = 2 x Rack, utilization = 75 % }
"""
PARTS = """\
gpu G { power = 700 W, memory = 80 GB, flops_bf16 = 989 TFLOP/s }
host Server { gpus = 8 x G, power = POWER }
"""


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is needed for `astral diff REV:path`", pytrace=False)
    r = tmp_path / "proj"
    (r / "designs" / "lib").mkdir(parents=True)
    (r / "designs" / "astral.toml").write_text("", encoding="utf-8")
    (r / "designs" / "main.astral").write_text(MAIN, encoding="utf-8")
    (r / "designs" / "lib" / "parts.astral").write_text(PARTS.replace("POWER", "10.2 kW"),
                                                        encoding="utf-8")
    _git(r, "init", "-q", "-b", "main")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "one")
    # the import changes between the revisions; the entry file does not
    (r / "designs" / "lib" / "parts.astral").write_text(PARTS.replace("POWER", "12 kW"),
                                                        encoding="utf-8")
    _git(r, "commit", "-q", "-am", "two")
    # and the work tree differs from both: the revisions must not read it
    (r / "designs" / "lib" / "parts.astral").write_text(PARTS.replace("POWER", "99 kW"),
                                                        encoding="utf-8")
    return r


def test_revisions_resolve_their_own_imports(repo):
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    proc = astral("diff", "HEAD~1:designs/main.astral", "HEAD:designs/main.astral", "--format",
                  "json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    power = {c["key"]: c for c in doc["changes"]["power"]}
    # 2 racks x 4 servers: 8 x 10.2 kW = 81.6 kW, then 8 x 12 kW = 96 kW (not the work tree's 99)
    assert (power["it_power_kw"]["before"], power["it_power_kw"]["after"]) == (81.6, 96.0)
    assert doc["changes"]["values"] == [{"key": "S.racks[0].hosts[0].power",
                                         "kind": "changed", "before": "10.2 kW",
                                         "after": "12 kW"}]
    # the work tree against its last commit: 99 kW per server
    proc = astral("diff", "HEAD:designs/main.astral", "designs/main.astral", "--format", "json",
                  cwd=repo)
    power = {c["key"]: c for c in json.loads(proc.stdout)["changes"]["power"]}
    assert power["it_power_kw"]["after"] == 792.0             # 8 x 99 kW
    # nothing in the work tree changed, and no temporary directory is left
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before


def test_a_revision_reads_the_shipped_stdlib_and_its_own_inventory(repo):
    # README: `astral diff HEAD~1:examples/astral.astral examples/astral.astral`; every stdlib
    # import of a revision was E100 "not a file of the revision" (exit 2), and the revision's
    # inventory E230: its reader read only the revision's .astral files, and the stdlib is the
    # package's, an inventory a data file of the revision
    design = repo / "designs" / "stdlib_user.astral"
    design.write_text("import stdlib.hardware { H800 }\n"
                      "inventory Fleet { file = \"fleet.csv\", required = [host] }\n"
                      "host H { gpus = 8 x H800, power = 10.2 kW, name = \"gpu-{host}\" }\n"
                      "site S { hosts = 2 x H, utilization = 75 %, inventory = Fleet }\n",
                      encoding="utf-8")
    fleet = repo / "designs" / "fleet.csv"
    fleet.write_text("name,serial\ngpu-0,S0\ngpu-1,S1\n", encoding="utf-8")
    _git(repo, "add", "designs/stdlib_user.astral", "designs/fleet.csv")
    _git(repo, "commit", "-q", "-m", "three")
    design.write_text(design.read_text(encoding="utf-8").replace("2 x H", "3 x H"),
                      encoding="utf-8")
    fleet.write_text("name,serial\ngpu-0,S0\ngpu-1,S1\ngpu-2,S2\n", encoding="utf-8")
    proc = astral("diff", "HEAD:designs/stdlib_user.astral", "designs/stdlib_user.astral",
                  "--format", "json", cwd=repo)
    assert proc.returncode == 0, proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["valid"] and not doc["diagnostics"]
    # what differs in the diagnostics is the warnings' figures (W626: 20.4 kW -> 30.6 kW), no
    # error on either side
    sides = [c["before"] or c["after"] for c in doc["changes"].get("diagnostics", [])]
    assert sides and all(s["severity"] == "warning" for s in sides), sides
    counts = {c["key"]: (c["before"], c["after"]) for c in doc["changes"]["counts"]}
    # 2 then 3 hosts of the stdlib's H800s, 8 each
    assert counts["gpus"] == (16, 24)
    power = {c["key"]: (c["before"], c["after"]) for c in doc["changes"]["power"]}
    assert power["it_power_kw"] == (20.4, 30.6)            # 2 x 10.2 kW, 3 x 10.2 kW


def test_a_revision_reads_its_own_climate_file(repo):
    """A site's `climate` file of the project is the revision's, from git: the climate loader
    read the disk (the revision's placeholders' folder holds no such file), so the revision's
    side was E652 "not found"; nor is the work tree's file read for it."""
    epw = (REPO / "tests" / "fixtures" / "climate" / "sample.epw").read_text(encoding="utf-8")
    lines = epw.splitlines(keepends=True)
    assert len(lines) == 8 + 12                  # 8 header lines, 12 hours
    (repo / "designs" / "weather.epw").write_text(epw, encoding="utf-8")
    (repo / "designs" / "sited.astral").write_text(
        'host H { power = 10 kW }\n'
        'site S { hosts = 2 x H, utilization = 75 %, climate = "weather.epw" }\n',
        encoding="utf-8")
    _git(repo, "add", "designs/weather.epw", "designs/sited.astral")
    _git(repo, "commit", "-q", "-m", "a climate")
    # the work tree's file keeps the header and the first 6 hours only
    (repo / "designs" / "weather.epw").write_text("".join(lines[:8 + 6]), encoding="utf-8")
    proc = astral("diff", "HEAD:designs/sited.astral", "designs/sited.astral", "--format",
                  "json", cwd=repo)
    assert proc.returncode == 0, proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["a"]["errors"] == 0 and "E652" not in proc.stdout
    # W643: 12 hours stand for 8,760 / 12 = 730 h each (the commit's), 6 for 8,760 / 6 =
    # 1,460 h each (the work tree's): the same warning of the same site, its figures changed
    changed = [(c["kind"], c["before"]["message"], c["after"]["message"])
               for c in doc["changes"]["diagnostics"]]
    assert changed == [(
        "changed", "climate file `weather.epw` holds 12 hours, not a year's 8,760: they stand "
                   "for the year in proportion (each for 730 h)",
        "climate file `weather.epw` holds 6 hours, not a year's 8,760: they stand for the year "
        "in proportion (each for 1,460 h)")]


def test_a_revision_names_the_projects_files_as_the_work_tree_does(repo):
    """A warning and a check of an imported file, unchanged: the same on both sides. The
    revision named the file from the repository's top (`designs/lib/parts.astral`) and the work
    tree from the project's (`lib/parts.astral`): each showed as removed and added again."""
    lib = repo / "designs" / "lib" / "parts.astral"
    lib.write_text(lib.read_text(encoding="utf-8") + 'check 1 W > 2 W else warning "lib warns"\n',
                   encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "a warning in the library")
    proc = astral("diff", "HEAD:designs/main.astral", "designs/main.astral", "--format", "json",
                  cwd=repo)
    assert proc.returncode == 0, proc.stderr
    changes = json.loads(proc.stdout)["changes"]
    assert "checks" not in changes and "lib warns" not in proc.stdout
    proc = astral("diff", "HEAD~1:designs/main.astral", "designs/main.astral", "--format",
                  "json", cwd=repo)
    changes = json.loads(proc.stdout)["changes"]
    assert [(c["key"], c["kind"]) for c in changes["checks"]] == [
        ("top level (lib/parts.astral): 1 W > 2 W", "added")]
    assert [c["after"]["file"] for c in changes["diagnostics"] if c["kind"] == "added" and
            "lib warns" in c["after"]["message"]] == ["lib/parts.astral"]


def test_a_revision_against_its_own_work_tree_accepts_the_same_warnings(repo):
    """The warnings an `allow` accepts were named by the revision's temporary directory, not
    as `REV:path`: a file against its own HEAD showed each as removed and added again (the
    shipped examples/single_pod.astral against HEAD: "12 difference(s)")."""
    main = repo / "designs" / "main.astral"
    main.write_text('allow W626 "no feeders yet"\n' + MAIN, encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "an allow")
    proc = astral("diff", "HEAD:designs/main.astral", "designs/main.astral", "--format", "json",
                  cwd=repo)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["changes"] == {}, doc["changes"]
    proc = astral("check", "designs/main.astral", cwd=repo)
    assert "W626" in proc.stdout and "accepted by allow" in proc.stdout, proc.stdout


def test_revision_paths_from_a_subdirectory_and_in_diagnostics(repo):
    (repo / "designs" / "main.astral").write_text(
        MAIN.replace("servers = 4", "servers = 5").replace(
            "utilization = 75 % }", 'utilization = 75 %\n  check gpus == 64 else error "64 GPUs"\n}'),
        encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "three")
    sub = repo / "designs"
    proc = astral("diff", "HEAD~1:./main.astral", "HEAD:./main.astral", "--color", "never",
                  cwd=sub)
    assert proc.returncode == 1, proc.stderr                  # B's check fails
    assert "--- a: HEAD~1:./main.astral [ok, " in proc.stdout       # its warnings: no cooling
    assert "+++ b: HEAD:./main.astral [1 error(s), " in proc.stdout
    # 2 racks x 5 servers x 8 GPUs = 80
    assert "+ error[E500] 64 GPUs (line 5)" in proc.stdout
    assert "~ gpus: 64 -> 80 (+16, +25.0 %)" in proc.stdout


def test_revision_errors_are_usage_errors(repo):
    proc = astral("diff", "nosuchrev:designs/main.astral", "designs/main.astral", cwd=repo)
    assert proc.returncode == 2 and "cannot read `nosuchrev:designs/main.astral` from git" \
        in proc.stderr
    proc = astral("diff", "HEAD:designs/missing.astral", "designs/main.astral", cwd=repo)
    assert proc.returncode == 2 and "from git" in proc.stderr
    proc = astral("diff", "HEAD:designs", "designs/main.astral", cwd=repo)
    assert proc.returncode == 2 and "is a tree, not a file" in proc.stderr


def test_links_out_of_the_repository_are_refused(repo, tmp_path):
    """A revision's `*.astral` symbolic links that point outside the repository are never
    followed: as the entry, E100 (exit 2) naming the link; as an import, the compiler's E207;
    one that stays inside reads as its target; other revisions of the repository still read
    (tar's data filter raised on such a link: E000 for any revision)."""
    secret = tmp_path / "secret.astral"
    secret.write_text('site Secret { }\n', encoding="utf-8")
    d = repo / "designs"
    os.symlink(str(secret), d / "abs.astral")
    os.symlink("../../secret.astral", d / "rel.astral")
    os.symlink("abs.astral", d / "via.astral")                 # inside, to a link that leaves
    os.symlink("main.astral", d / "same.astral")
    (d / "uses.astral").write_text("import abs\nsite U { }\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "links")
    for name, to in (("abs", f"`{secret}`, outside"), ("rel", "`../../secret.astral`, outside"),
                     ("via", "a link that leaves")):
        proc = astral("diff", f"HEAD:designs/{name}.astral", "designs/main.astral", cwd=repo)
        assert proc.returncode == 2, proc.stderr
        assert f"error[E100]: cannot read `HEAD:designs/{name}.astral`: it is a symbolic link " \
               f"to {to} the repository" in proc.stderr
        assert "Secret" not in proc.stdout + proc.stderr and "E000" not in proc.stderr
    proc = astral("diff", "HEAD:designs/uses.astral", "designs/main.astral", "--color", "never",
                  cwd=repo)
    assert proc.returncode == 1 and "E000" not in proc.stdout + proc.stderr, proc.stderr
    assert "- error[E207] module `abs` resolves outside the project" in proc.stdout
    assert "Secret" not in proc.stdout
    proc = astral("diff", "HEAD:designs/same.astral", "HEAD:designs/main.astral", "--format",
                  "json", cwd=repo)
    assert proc.returncode == 0 and json.loads(proc.stdout)["identical"], proc.stderr
    proc = astral("diff", "HEAD~1:designs/main.astral", "HEAD:designs/main.astral", cwd=repo)
    assert proc.returncode == 0, proc.stderr


def test_a_revision_is_never_an_option_of_git(repo):
    for arg in ("-x:designs/main.astral", "--output=/tmp/astral-x:designs/main.astral",
                "--upload-pack=touch:designs/main.astral"):
        proc = astral("diff", "--", arg, "designs/main.astral", cwd=repo)
        assert proc.returncode == 2 and "it starts with `-`" in proc.stderr, proc.stderr
    assert not os.path.exists("/tmp/astral-x")
    proc = astral("diff", "HEAD^{tree}:designs/main.astral", "designs/main.astral", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr         # any revision git names still reads


def _blob(repo: Path, data: bytes, name: str, mode: str = "100644") -> None:
    """A blob of `data` at `name` in the index (never in the work tree)."""
    oid = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data,
                         check=True, capture_output=True).stdout.decode().strip()
    _git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{name}")


def test_a_revisions_files_cost_no_memory_or_disk(repo, monkeypatch):
    """A revision's `.astral` files are laid out as sparse placeholders and read from git only
    when imported: a 256 MiB file (256 KB in git) that nothing imports was read into memory
    whole by `git archive` (1.5 GB peak for 700 MB) and written to the disk; imported, it is
    E108 from its size alone. A link whose target is longer than any path is refused."""
    import tracemalloc

    from astral_dsl.cli.revision import materialise

    big = 256 * 1024 * 1024
    _blob(repo, bytes(big), "designs/big.astral")
    _blob(repo, b"x" * 5000, "designs/long.astral", mode="120000")
    (repo / "designs" / "imports_big.astral").write_text("import big\nsite B { }\n")
    _git(repo, "add", "designs/imports_big.astral")
    _git(repo, "commit", "-q", "-m", "big")
    monkeypatch.chdir(repo)                              # git reads the working directory's
    folder, entry, read = materialise("HEAD", "designs/main.astral")
    try:
        placeholder = os.stat(folder / "designs" / "big.astral")
        assert placeholder.st_size == big and placeholder.st_blocks == 0      # sparse
        assert read(folder / "designs" / "lib" / "parts.astral") == \
            PARTS.replace("POWER", "12 kW").encode()                        # HEAD's, from git
        assert not (folder / "designs" / "long.astral").exists()
    finally:
        shutil.rmtree(folder)
    tracemalloc.start()
    try:
        proc = astral("diff", "HEAD~1:designs/main.astral", "HEAD:designs/main.astral",
                      cwd=repo)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert proc.returncode == 0, proc.stderr
    assert peak < big // 4, peak                         # the compile of two small designs
    proc = astral("diff", "HEAD:designs/imports_big.astral", "HEAD:designs/main.astral",
                  "--color", "never", cwd=repo)
    assert "- error[E108] module `big` is too large to compile (268,435,456 bytes; the limit " \
           "is 8 MiB)" in proc.stdout, proc.stdout + proc.stderr
    proc = astral("diff", "HEAD:designs/long.astral", "designs/main.astral", cwd=repo)
    assert proc.returncode == 2 and "error[E100]: cannot read `HEAD:designs/long.astral`: it " \
        "is a symbolic link to a target that is no path (5,000 bytes), outside the " \
        "repository" in proc.stderr, proc.stderr


def test_a_jobs_forecast_carries_its_band():
    """The diff's forecast of a job says how far to trust it, as `astral forecast` does: its
    band, and whether it is outside the calibrated envelope (a what-if that moves a job out
    of the regimes the calibration checked shows as a change of it)."""
    from astral_dsl import seer
    from astral_dsl.api.sides import forecasts
    from astral_dsl.seer.envelope import band_text

    design = astral_dsl.load(str(REPO / "examples" / "single_pod.astral"))
    env = seer.forecast(design, job="llama70b").envelope()
    got = forecasts(design, ["llama70b"])["llama70b"]
    assert not env.inside
    assert got["band"] == band_text(env.band) + " (outside the calibrated envelope)"
    # tokens/s whole, beside a band of -19/+24 % (it had a tenth of a token per second)
    fc = seer.forecast(design, job="llama70b")
    assert got["tokens_per_s"] == round(fc.tokens_per_s) and type(got["tokens_per_s"]) is int


def test_the_working_directory_given_as_a_side_is_named_as_given(tmp_path):
    """`diff A /tmp/dir` run inside /tmp/dir named the folder `.` (a path below the working
    directory is shown relative to it, the directory itself was `.`)."""
    folder = tmp_path / "designs"
    folder.mkdir()
    p = astral("diff", str(REPO / "examples" / "tutorial_rack.astral"), str(folder),
               cwd=folder)
    assert p.returncode == 2, p
    assert f"cannot read `{folder}`: Is a directory" in p.stdout + p.stderr
    assert "`.`" not in p.stdout + p.stderr and "--> .\n" not in p.stdout
