"""Security: nothing from a shared location is ever unpickled, fluid names cannot pick a CoolProp
backend that prints, writes or loads libraries, design text cannot drive the terminal, and
`astral fmt DIR` rewrites only regular files inside DIR.

Every command runs as a subprocess with a private HOME and TMPDIR, so the tests neither see nor
leave anything in the real temporary directory or cache."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import lark
import pytest

from astral_dsl import resources, usercache
from astral_dsl.model.fluid_names import check_fluid_name

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "examples" / "astral.astral"


def _env(home: Path, tmp: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_CACHE_HOME", "ASTRAL_CACHE_DIR", "NO_COLOR")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    env.update(extra)
    return env


def _here(*args, env):
    """`astral ARGS` in this process (tests/clirun.py) with `env` for the call: for what the
    command writes (its streams are pipes, as a process's are), without the ~0.25 s of CPU a
    new interpreter takes. `_astral` below is a process: for the cache a run leaves, pickles
    found on disk, and what could block."""
    from clirun import astral

    return astral(*args, env=env, text=False)


def _astral(*args, env, cwd=REPO, stdin=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=timeout, input=stdin)


@pytest.fixture
def sandbox(tmp_path):
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    return home, tmp


# ---- the parser cache ------------------------------------------------------------------------------
class _Payload:
    """Unpickling this creates the marker file: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _old_cache_paths(tmp: Path):
    """Where astral_dsl used to keep Lark's pickled parser (before this fix)."""
    grammar = resources.grammar_text().encode()
    version = lark.__version__.encode()
    compiler = hashlib.sha256(grammar + version).hexdigest()[:16]
    concrete = hashlib.sha256(b"cst" + grammar + version).hexdigest()[:16]
    return [tmp / f"astral_dsl_grammar_{compiler}.lark_cache",
            tmp / f"astral_dsl_cst_{concrete}.lark_cache"]


def test_a_poisoned_cache_at_the_old_path_changes_nothing(sandbox, tmp_path):
    home, tmp = sandbox
    marker = tmp_path / "code-ran"
    # what Lark's own loader read first: a hash line, then a pickle it loads before any check
    for path in _old_cache_paths(tmp):
        path.write_bytes(b"0" * 64 + b"\n" + pickle.dumps(_Payload(marker)))
        os.chmod(path, 0o666)
    poisoned = _astral("check", "--color", "never", str(REFERENCE), env=_env(home, tmp))
    fmt = _astral("fmt", "--check", str(REFERENCE), env=_env(home, tmp))
    assert not marker.exists(), "a pickle from the shared temporary directory was loaded"
    clean_tmp = tmp_path / "clean"
    clean_tmp.mkdir()
    clean = _astral("check", "--color", "never", str(REFERENCE),
                    env=_env(tmp_path / "home2", clean_tmp))
    assert poisoned.returncode == clean.returncode == 0, poisoned.stderr.decode()
    assert poisoned.stdout == clean.stdout
    assert fmt.returncode == 0, fmt.stderr.decode()
    assert not marker.exists()
    # and nothing new appeared in the shared temporary directory
    assert sorted(p.name for p in tmp.iterdir()) == sorted(p.name for p in
                                                           _old_cache_paths(tmp))


# what a check of the reference caches (syntax/astcache.py): the syntax tree of the reference
# itself (it parses without an error); the parser's tables and the trees of the stdlib modules
# it imports come with the package (syntax/tables.txt, syntax/stdlib_trees.txt:
# tests/test_tables.py), so they are not cached, nor are the stdlib climate file's hours
# (analyses/climate_table.py) and its air units' humid-air states (analyses/humid_air_table.py);
# the two facility-water circuits' hours per watt are (analyses/heat_rejection.py)
# the user's syntax tree, the SHA-256 of the stdlib climate file and of the wet-bulb table
# (filedigest.py), the heat-rejection profiles of the two circuits
CACHED_BY_CHECK = ["astu", "digest", "digest", "rejection", "rejection"]


def test_the_cache_is_private_plain_data(sandbox):
    home, tmp = sandbox
    proc = _astral("check", str(REFERENCE), env=_env(home, tmp))
    assert proc.returncode == 0, proc.stderr.decode()
    folder = home / ".cache" / "astral_dsl"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    entries = sorted(folder.iterdir())
    assert sorted(e.name.rsplit("-", 1)[0] for e in entries) == CACHED_BY_CHECK
    for e in entries:
        assert stat.S_IMODE(e.stat().st_mode) == 0o600
        data = e.read_bytes()
        assert data.startswith(usercache.MAGIC)
        head, digest, payload = data[len(usercache.MAGIC):].split(b"\n", 2)
        json.loads(payload)                       # JSON, not a pickle
        assert hashlib.sha256(payload).hexdigest().encode() == digest
    # a second run uses it and says the same
    again = _astral("check", str(REFERENCE), env=_env(home, tmp))
    assert again.stdout == proc.stdout


def test_xdg_cache_home_is_honoured(sandbox, tmp_path):
    home, tmp = sandbox
    xdg = tmp_path / "xdg"
    proc = _astral("check", str(REFERENCE), env=_env(home, tmp, XDG_CACHE_HOME=str(xdg)))
    assert proc.returncode == 0
    assert sorted(e.name.rsplit("-", 1)[0] for e in (xdg / "astral_dsl").iterdir()) == \
        CACHED_BY_CHECK
    assert not (home / ".cache").exists()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(folder))
    return folder


def test_an_entry_is_read_back_only_for_its_key(cache):
    assert usercache.write("thing", "k1", {"a": [1, 2]})
    assert usercache.read("thing", "k1") == {"a": [1, 2]}
    assert usercache.read("thing", "k2") is None
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_forged_or_damaged_entry_is_ignored(cache):
    usercache.write("thing", "k", {"a": 1})
    path = cache / "thing.json"
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"a":1', b'"a":2'))          # payload changed, digest kept
    assert usercache.read("thing", "k") is None
    path.write_bytes(data[:-3])                                  # truncated
    assert usercache.read("thing", "k") is None
    path.write_bytes(pickle.dumps({"a": 1}))                     # not our format at all
    assert usercache.read("thing", "k") is None


def test_a_damaged_parser_entry_is_rebuilt(cache):
    from astral_dsl.syntax import tables

    tables.build("probe", lexer="contextual", start=["start"])
    path, = cache.glob("parser-probe-*.json")
    data = path.read_bytes()
    head, digest, payload = data[len(usercache.MAGIC):].split(b"\n", 2)
    bogus = json.dumps({"d": [["data", {"d": []}], ["memo", {"d": []}]]}).encode()
    path.write_bytes(usercache.MAGIC + head + b"\n" + hashlib.sha256(bogus).hexdigest().encode()
                     + b"\n" + bogus)
    parser = tables.build("probe", lexer="contextual", start=["start"])
    assert parser.parse("site S { }") is not None


def test_entries_of_other_grammars_are_kept_and_pruned(cache):
    """Checkouts of different grammars keep an entry each (none rebuilds another's); only the
    four newest entries of a parser stay."""
    from astral_dsl.syntax import tables

    tables.build("probe", lexer="contextual", start=["start"])
    first, = cache.glob("parser-probe-*.json")
    for i in range(5):                       # five other "grammars": other keys, other entries
        assert usercache.write(f"parser-probe-other{i}", f"k{i}", {"v": i})
        os.utime(cache / f"parser-probe-other{i}.json", (1e9 + i, 1e9 + i))
    os.utime(first, (2e9, 2e9))              # the newest
    usercache.prune("parser-probe-")
    kept = sorted(p.name for p in cache.glob("parser-probe-*.json"))
    assert kept == sorted([first.name] + [f"parser-probe-other{i}.json" for i in (2, 3, 4)])
    assert usercache.read(first.name[:-len(".json")], "wrong key") is None


def test_a_shared_cache_directory_is_not_used(cache):
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o777)                  # anyone could plant entries here
    assert usercache.cache_dir() is None
    assert not usercache.write("thing", "k", 1)
    assert list(cache.iterdir()) == []


def test_every_folder_the_cache_creates_is_private(tmp_path, monkeypatch):
    folder = tmp_path / "a" / "b" / "c" / "cache"
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(folder))
    old = os.umask(0o000)                  # a permissive umask must not leak into the folders
    try:
        assert usercache.cache_dir() == folder
    finally:
        os.umask(old)
    for p in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c", folder):
        st = os.lstat(p)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
        assert stat.S_IMODE(st.st_mode) == 0o700, (p, oct(st.st_mode))


@pytest.mark.parametrize("mode, used", [(0o777, False), (0o775, False), (0o757, False),
                                        (0o1777, True), (0o755, True), (0o700, True)])
def test_a_parent_writable_by_others_is_refused(tmp_path, monkeypatch, mode, used):
    """Another user who may write in a folder above the cache could rename it away and put
    theirs in its place: such a parent (or any folder higher up) is refused, unless sticky."""
    for parent in (tmp_path / "shared", tmp_path / "up" / "mid"):
        parent.mkdir(parents=True)
        top = parent if parent.name == "shared" else tmp_path / "up"
        os.chmod(top, mode)
        folder = parent / "cache"
        monkeypatch.setenv("ASTRAL_CACHE_DIR", str(folder))
        assert (usercache.cache_dir() == folder) is used, (parent, oct(mode))
        assert usercache.write("thing", "k", 1) is used
        os.chmod(top, 0o700)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="changing a folder's owner needs root")
def test_a_parent_of_another_user_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    folder = parent / "cache"
    folder.mkdir(mode=0o700)
    os.chown(parent, 65534, 65534)
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(folder))
    assert usercache.cache_dir() is None


def test_a_symlinked_cache_directory_is_not_used(cache, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.symlink_to(elsewhere)
    assert usercache.cache_dir() is None


def test_a_symlinked_or_writable_entry_is_not_read(cache, tmp_path):
    usercache.write("thing", "k", {"a": 1})
    path = cache / "thing.json"
    os.chmod(path, 0o666)
    assert usercache.read("thing", "k") is None
    os.chmod(path, 0o600)
    planted = tmp_path / "planted.json"
    planted.write_bytes(path.read_bytes())
    os.chmod(planted, 0o600)
    path.unlink()
    path.symlink_to(planted)
    assert usercache.read("thing", "k") is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="changing a file's owner needs root")
def test_an_entry_of_another_user_is_not_read(cache):
    usercache.write("thing", "k", {"a": 1})
    os.chown(cache / "thing.json", 65534, 65534)
    assert usercache.read("thing", "k") is None


# the one module that reads pickles: Dask's protocol is made of them, and it reads them there
# through a restricted unpickler that calls nothing (tests/explore/test_cluster_trust.py)
DASK_GUARD = REPO / "astral_dsl" / "explore" / "unpickle.py"


def test_no_pickle_is_ever_loaded():
    """No module of the package imports pickle or asks Lark for its pickle cache, except the
    restricted unpickler of Dask's messages, which never calls pickle's own loaders."""
    for path in (REPO / "astral_dsl").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "cPickle" not in text, path
        assert "cache=" not in text.replace("lru_cache", "").replace("cache=None", ""), path
        if path == DASK_GUARD:
            assert "pickle.load(" not in text and "pickle.loads(" not in text, path
            assert "pickle.Unpickler(" not in text and "_Unpickler.dispatch)" in text, path
            continue
        assert "import pickle" not in text, path


# ---- CoolProp fluid names --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["Water", "water", "R134a", "R1234ze(E)", "n-Propane",
                                  "HEOS::Water", "INCOMP::MPG[0.25]", "INCOMP::Water",
                                  "R32[0.697615]&R125[0.302385]", "HEOS::R32[0.5]&R125[0.5]"])
def test_accepted_fluid_names(name):
    assert check_fluid_name(name) is None


@pytest.mark.parametrize("name", ["REFPROP::Water", "REFPROP-Water", "refprop::water",
                                  "REFPROP-MIX:R32[0.5]&R125[0.5]", "BICUBIC&HEOS::Water",
                                  "TTSE&HEOS::Water", "BICUBIC&REFPROP::Water", "IF97::Water",
                                  "SRK::Water", "PR::Water", "heos::Water", "Water|liquid",
                                  "INCOMP::MPG[2]", "INCOMP::MPG[0]", "Water\x1b", "",
                                  "../../etc/passwd", "W" * 200, "A&B", "Water;Air",
                                  "INCOMP::" + "&".join(["MPG[0.1]"] * 3)])
def test_refused_fluid_names(name):
    problem = check_fluid_name(name)
    assert problem is not None and problem[0] == "E649"
    from astral_dsl.analyses import fluids

    with pytest.raises(ValueError):           # the Python API is held to the same rule
        fluids.properties(name, 30.0)


REFUSED_DESIGN = """\
gpu G { power = 700 W, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 % }
rack R { hosts = 4 x H }
fluid Evil { coolprop = "REFPROP::Water" }
cdu C { capacity = 1 MW }
pod P {
  racks = 4 x R
  loop secondary { fluid = Evil, supply = 35 degC, rise = 10 K, cdu = C, cdus = 2 }
}
site S { pods = 2 x P }
"""


def test_a_refused_backend_is_a_front_end_diagnostic(sandbox, tmp_path):
    home, tmp = sandbox
    path = tmp_path / "evil.astral"
    path.write_text(REFUSED_DESIGN)
    proc = _astral("check", "--format", "json", str(path), env=_env(home, tmp))
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)                    # stdout is exactly one JSON document
    codes = [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["column"])
             for d in doc["diagnostics"]]
    assert codes == [("E649", 4, 25)], codes
    assert not (home / ".CoolProp").exists()


def _python(sandbox, *lines: str):
    home, tmp = sandbox
    return subprocess.run([sys.executable, "-c", "\n".join(("import os, sys",) + lines)],
                          env=_env(home, tmp), capture_output=True, text=True, timeout=60)


def test_library_output_goes_to_stderr(sandbox):
    out = _python(sandbox, "from astral_dsl.stdio import library_output",
                  "print('before', flush=True)",
                  "with library_output():",
                  "    os.write(1, b'from C\\n')",
                  "print('after')")
    assert out.stdout == "before\nafter\n"
    assert "from C" in out.stderr


def test_the_language_server_keeps_its_stream_to_itself(sandbox):
    out = _python(sandbox, "from astral_dsl.stdio import detach_stdout, library_output",
                  "protocol = detach_stdout()",
                  "os.write(1, b'stray C output\\n')",
                  "print('stray print')",
                  "with library_output():",
                  "    os.write(1, b'library\\n')",
                  "protocol.write(b'PROTOCOL')")
    assert out.stdout == "PROTOCOL"
    assert "stray C output" in out.stderr and "stray print" in out.stderr
    assert "library" in out.stderr


# ---- control characters ----------------------------------------------------------------------------
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
NASTY = OSC52 + "\x9b2J" + "\u202e" + "\r" + "\x7f"
# what a line of a design may hold: a carriage return alone ends a line for an editor, not for
# the grammar, and is E104 (test_a_lone_carriage_return_is_rejected_and_printed_escaped)
IN_A_LINE = NASTY.replace("\r", "")

CONTROL_DESIGN = f"""\
gpu G {{ power = 700 W, note = "{OSC52}" }}
host H {{ gpus = 8 x G }}   // {IN_A_LINE}
rack R {{
  hosts = 4 x H
  check power <= 1 kW else error "too hot {OSC52} \u202e"   // {IN_A_LINE}
}}
site S {{ racks = 2 x R }}
"""


def _no_controls(text: str) -> None:
    for ch in ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\x7f"):
        assert ch not in text, f"{ch!r} reached the terminal: {text[:2000]!r}"


def test_design_text_is_printed_with_controls_escaped(sandbox, tmp_path):
    home, tmp = sandbox
    path = tmp_path / "controls.astral"
    path.write_text(CONTROL_DESIGN, encoding="utf-8")
    for args in (["check", "--color", "never"], ["size", "--color", "never"],
                 ["export", "--format", "human", "--color", "never"]):
        proc = _here(*args, str(path), env=_env(home, tmp))
        out = proc.stdout.decode() + proc.stderr.decode()
        assert "Traceback" not in out
        _no_controls(out)
    proc = _here("check", "--color", "never", str(path), env=_env(home, tmp))
    text = proc.stdout.decode()
    assert proc.returncode == 1 and "[E500]" in text
    assert "too hot \\x1b]52;c;ZWNobyBwd25lZA==\\x07" in text
    # the caret still sits under the span: the escaped line is shown with it
    lines = text.splitlines()
    shown = next(i for i, ln in enumerate(lines) if ln.startswith("5 |"))
    caret = lines[shown + 1]
    assert caret.index("^") == lines[shown].index("power <= 1 kW")


def test_a_lone_carriage_return_is_rejected_and_printed_escaped(sandbox, tmp_path):
    # `// note\rcheck ...` shows a line of code in an editor that the grammar reads as comment
    home, tmp = sandbox
    path = tmp_path / "controls.astral"
    path.write_text(CONTROL_DESIGN.replace(f"// {IN_A_LINE}", f"// {NASTY}", 1),
                    encoding="utf-8")
    proc = _here("check", "--color", "never", str(path), env=_env(home, tmp))
    text = proc.stdout.decode()
    _no_controls(text)
    # line 2, after `host H { gpus = 8 x G }   // ` (29 characters), OSC52 (24), `\x9b2J` (3)
    # and U+202E (1): 57 characters, the carriage return in column 58
    column = 29 + len(OSC52) + 3 + 1 + 1
    assert proc.returncode == 1 and "error[E104]" in text and f"controls.astral:2:{column}" in text


def test_colour_output_has_only_our_own_escapes(sandbox, tmp_path):
    home, tmp = sandbox
    path = tmp_path / "controls.astral"
    path.write_text(CONTROL_DESIGN, encoding="utf-8")
    proc = _here("check", "--color", "always", str(path), env=_env(home, tmp))
    text = proc.stdout.decode()
    assert "\x1b]" not in text and "\x07" not in text       # no OSC, only SGR colours
    import re

    assert not re.findall(r"\x1b(?!\[[0-9;]*m)", text)


def test_json_output_escapes_every_control(sandbox, tmp_path):
    home, tmp = sandbox
    path = tmp_path / "controls.astral"
    path.write_text(CONTROL_DESIGN, encoding="utf-8")
    proc = _here("check", "--format", "json", str(path), env=_env(home, tmp))
    _no_controls(proc.stdout.decode())
    doc = json.loads(proc.stdout)
    (e500,) = [d for d in doc["diagnostics"] if d["code"] == "E500"]
    assert OSC52 in e500["message"]      # the data itself is intact


def test_file_names_and_diffs_are_escaped(sandbox, tmp_path):
    home, tmp = sandbox
    folder = tmp_path / "proj"
    folder.mkdir()
    evil = folder / f"a{OSC52}.astral"
    evil.write_text(f"site   S {{ }}   // {NASTY}\n", encoding="utf-8")
    for args in (["fmt", "--check", str(folder)], ["fmt", "--diff", str(folder)],
                 ["check", "--color", "never", str(evil)]):
        proc = _here(*args, env=_env(home, tmp))
        _no_controls(proc.stdout.decode() + proc.stderr.decode())
        assert "Traceback" not in proc.stderr.decode()


# ---- astral fmt DIR -----------------------------------------------------------------------------------
MESSY = "site   S{racks=2 x R}\n"
TIDY = "site S { racks = 2 x R }\n"


def test_fmt_rewrites_only_regular_files_inside_the_folder(sandbox, tmp_path):
    home, tmp = sandbox
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.astral"
    secret.write_text(MESSY)
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "a.astral").write_text(MESSY)
    (proj / "sub" / "b.astral").write_text(MESSY)
    (proj / "link.astral").symlink_to(secret)
    (proj / "linkdir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(proj / "fifo.astral")
    if os.geteuid() == 0:
        os.mknod(proj / "null.astral", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    proc = _astral("fmt", str(proj), env=_env(home, tmp), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (proj / "a.astral").read_text() == TIDY
    assert (proj / "sub" / "b.astral").read_text() == TIDY
    assert secret.read_text() == MESSY                  # never through a link out of the folder
    assert (proj / "link.astral").is_symlink()
    assert stat.S_ISFIFO(os.lstat(proj / "fifo.astral").st_mode)
    check = _astral("fmt", "--check", str(proj), env=_env(home, tmp), timeout=60)
    assert check.returncode == 0 and check.stdout == b""


def test_fmt_and_check_refuse_a_named_fifo_or_device(sandbox, tmp_path):
    home, tmp = sandbox
    fifo = tmp_path / "pipe.astral"
    os.mkfifo(fifo)
    for args in (["fmt", str(fifo)], ["check", str(fifo)], ["fmt", "/dev/zero"],
                 ["check", "/dev/zero"]):
        proc = _astral(*args, env=_env(home, tmp), timeout=60)      # must not block
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert b"E100" in proc.stdout + proc.stderr and b"regular file" in proc.stdout + \
            proc.stderr


def test_an_import_of_a_fifo_does_not_block(sandbox, tmp_path):
    home, tmp = sandbox
    (tmp_path / "astral.toml").write_text("")
    os.mkfifo(tmp_path / "parts.astral")
    main = tmp_path / "main.astral"
    main.write_text("import parts\nsite S { }\n")
    proc = _astral("check", "--color", "never", str(main), env=_env(home, tmp), timeout=60)
    assert proc.returncode == 2 and b"[E100]" in proc.stdout, proc.stdout


def test_a_huge_file_is_refused_before_it_is_read(sandbox, tmp_path):
    from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES

    home, tmp = sandbox
    big = tmp_path / "big.astral"
    with open(big, "wb") as fh:
        fh.truncate(MAX_SOURCE_BYTES + 1)                # sparse: costs no disk
    proc = _astral("check", "--color", "never", str(big), env=_env(home, tmp), timeout=60)
    assert proc.returncode == 2 and b"[E108]" in proc.stdout, proc.stdout


# ---- the stdlib's syntax trees ---------------------------------------------------------------------
def _stdlib_source(module: str = "cooling"):
    from astral_dsl import resources
    from astral_dsl.syntax.source import Source

    path = resources.stdlib_dir() / f"{module}.astral"
    return Source(str(path), path.read_text(encoding="utf-8"))


def test_a_cached_stdlib_tree_is_the_parsed_tree(cache):
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.parser import parse

    source = _stdlib_source()
    fresh = astcache.parse_cached(source, parse)              # parsed, then stored
    entry, = cache.glob("ast-cooling-*.json")
    calls = []
    again = astcache.parse_cached(source, lambda s: calls.append(s) or parse(s))
    assert calls == []                                         # read back, not parsed
    assert astcache._encode(again) == astcache._encode(fresh)  # every node, field and span
    assert entry.is_file()


@pytest.mark.parametrize("forged", [
    {"n": "Path", "f": ["/etc/passwd"]},                       # not a node class of the AST
    {"Path": ["/etc/passwd"]},
    {"Module": []},                                            # a node class, its fields wrong
    {"Module": 5},
    {"n": "__class__", "f": []},
    {"x": 1},
    [1, 2, 3],                                                 # not a tree at all
])
def test_a_forged_stdlib_tree_is_parsed_again(cache, forged):
    """An entry is data: it can only name the AST's node classes; anything else is refused and
    the module parsed afresh."""
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.parser import parse

    source = _stdlib_source()
    astcache.parse_cached(source, parse)
    entry, = cache.glob("ast-cooling-*.json")
    data = entry.read_bytes()
    head, digest, payload = data[len(usercache.MAGIC):].split(b"\n", 2)
    bogus = json.dumps(forged).encode()
    entry.write_bytes(usercache.MAGIC + head + b"\n" +
                      hashlib.sha256(bogus).hexdigest().encode() + b"\n" + bogus)
    calls = []
    tree = astcache.parse_cached(source, lambda s: calls.append(s) or parse(s))
    assert calls == [source]
    assert astcache._encode(tree) == astcache._encode(parse(source))


# ---- the user's own files' syntax trees -------------------------------------------------------------
def test_a_users_clean_file_is_read_back_and_a_broken_one_never_cached(cache, tmp_path):
    from astral_dsl.semantics import modules
    from astral_dsl.syntax import parser
    from astral_dsl.syntax.source import Source

    ref = REPO / "examples" / "astral.astral"
    source = Source(str(ref), ref.read_text(encoding="utf-8"))
    fresh, errors = modules._parse_source(source, False)          # parsed, then stored
    assert errors == [] and len(list(cache.glob("astu-*.json"))) == 1
    calls = []
    real = parser.parse
    try:
        parser.parse = lambda s: calls.append(s) or real(s)
        again, errors = modules._parse_source(source, False)
        # the same text under another name: read back with its spans in that file
        moved, _ = modules._parse_source(Source(str(tmp_path / "x.astral"), source.text), False)
    finally:
        parser.parse = real
    assert calls == [] and errors == []                            # read back, not parsed
    from astral_dsl.syntax import astcache
    assert astcache._encode(again) == astcache._encode(fresh)      # every node, field and span
    assert moved.items[0].span.file == str(tmp_path / "x.astral")
    broken = Source(str(tmp_path / "b.astral"), "rack R {\n  hosts = \n}\n")
    tree, errors = modules._parse_source(broken, False)
    assert errors and len(list(cache.glob("astu-*.json"))) == 1    # its errors, not cached


def test_the_users_cached_trees_are_bounded(cache, monkeypatch):
    from astral_dsl.semantics import modules
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.source import Source

    monkeypatch.setattr(astcache, "USER_ENTRIES", 3)
    # files of SMALL_TREE characters or more: a process with Lark imported keeps only those
    padding = "// a line of padding\n" * (modules.SMALL_TREE // 21 + 1)
    for i in range(8):
        modules._parse_source(Source(f"f{i}.astral", f"param p{i} = {i}\n{padding}"), False)
    assert len(list(cache.glob("astu-*.json"))) == 3


def test_a_small_file_is_parsed_not_cached(cache):
    """Below modules.SMALL_TREE characters, once Lark is imported, a parse costs less than reading a tree back and much
    less than a miss's write: such a file never gets an entry, and parses the same."""
    from astral_dsl.semantics import modules
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.parser import parse_all
    from astral_dsl.syntax.source import Source

    source = Source("small.astral", "param p = 1\n")
    for _ in range(2):
        tree, errors = modules._parse_source(source, False)
        assert errors == [] and list(cache.glob("astu-*.json")) == []
    assert astcache._encode(tree) == astcache._encode(parse_all(source)[0])


def test_the_language_servers_buffers_are_not_cached(cache, tmp_path, monkeypatch):
    """An editor's text reaches the compiler through the language server's own reader: a clean
    analysis parses it without writing a syntax-tree entry (one per keystroke, never read back).
    The stdlib's trees are still not parsed again (they ship with the package)."""
    from astral_dsl.lsp import analysis
    from astral_dsl.syntax import parser

    parsed = []
    real = parser.parse
    monkeypatch.setattr(parser, "parse", lambda s: parsed.append(s.name) or real(s))
    path = tmp_path / "d.astral"
    text = (REPO / "examples" / "single_pod.astral").read_text(encoding="utf-8")
    for edit in range(3):
        result = analysis.analyse(path.as_uri(), path, text + f"\nparam edit{edit} = {edit}\n")
        assert result.design is not None
    assert list(cache.glob("astu-*.json")) == []
    assert not any("stdlib" in name for name in parsed), parsed



def _planted(tmp_path, name: str):
    """A file of the user's, and a folder someone made beforehand with `name` a link to it."""
    precious = tmp_path / "precious.txt"
    precious.write_text("kept\n", encoding="utf-8")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / name).symlink_to(precious)
    return precious, folder


@pytest.mark.parametrize("command, name", [
    # `astral synth x -o /tmp/drill` into a folder another user made, with rank-0.json.gz a
    # link to the user's own file: the drill's trace overwrote that file; and NetBox's files
    (["synth", str(REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"), "-o"],
     "rank-0.json.gz"),
    (["export", str(REPO / "examples" / "single_pod.astral"), "--netbox"], "devices.csv"),
])
def test_no_file_is_written_through_a_link_in_an_output_folder(tmp_path, capsys, command, name):
    from test_cli import call

    precious, folder = _planted(tmp_path, name)
    code, out, err = call(command + [str(folder)], capsys)
    assert code == 2
    assert f"`{folder / name}` is a symbolic link: nothing is written through one" in err
    assert precious.read_text(encoding="utf-8") == "kept\n"
    code, out, err = call(command + [str(tmp_path / "fresh")], capsys)
    assert code == 0, err
    assert (tmp_path / "fresh" / name).is_file()


def test_nor_through_a_link_to_a_folder_in_an_output_folder(tmp_path, capsys):
    # `astral export --netbox DIR` with DIR/device-types a link to another folder wrote the
    # device types there (O_NOFOLLOW guards the last name of a path only), making its folders
    from test_cli import call

    elsewhere, folder = tmp_path / "elsewhere", tmp_path / "folder"
    elsewhere.mkdir()
    folder.mkdir()
    (folder / "device-types").symlink_to(elsewhere, target_is_directory=True)
    code, out, err = call(["export", str(REPO / "examples" / "single_pod.astral"), "--netbox",
                           str(folder)], capsys)
    assert code == 2
    assert f"`{folder / 'device-types'}` is a symbolic link: nothing is written through one" \
        in err
    assert list(elsewhere.iterdir()) == []
