"""The per-user cache of a user's syntax trees (syntax/astcache.py) keeps a small file's tree only
for a process that has not imported Lark: once Lark is imported (a language server, a sweep, a
suite), a file of fewer than SMALL_TREE characters (semantics/modules.py) is parsed, its entry neither read nor written (it
parses faster than its entry is written); a larger one is kept and read back; and a small file
still starts `astral check` without Lark once its tree is cached."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import astral_dsl
from astral_dsl.semantics import modules

REPO = Path(__file__).resolve().parents[1]


def _design(racks: int) -> str:
    return "site S {\n    power = 500 kW\n" + "".join(
        f"    rack r{i} {{ power = {i + 1} kW }}\n" for i in range(racks)) + "}\n"


def _parses(monkeypatch):
    count = [0]
    parse_all = modules.parse_all

    def counted(source):
        count[0] += 1
        return parse_all(source)

    monkeypatch.setattr(modules, "parse_all", counted)
    return count


def test_a_small_file_is_parsed_a_large_one_read_back(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(cache))
    astral_dsl.compile(str(REPO / "examples" / "tutorial_rack.astral"))
    assert "lark" in sys.modules
    small, large = tmp_path / "small.astral", tmp_path / "large.astral"
    small.write_text(_design(3), encoding="utf-8")
    large.write_text(_design(80), encoding="utf-8")
    assert len(small.read_text()) < modules.SMALL_TREE == 2048 < len(large.read_text())
    entries = lambda: sorted(p.name for p in cache.glob("astu-*"))      # noqa: E731
    before = entries()
    parses = _parses(monkeypatch)
    for _ in range(2):
        assert astral_dsl.compile(str(small)).design.roots[0].path == "S"
    assert parses[0] == 2 and entries() == before          # parsed each time, nothing kept
    for _ in range(2):
        assert len(astral_dsl.compile(str(large)).design.roots[0].members) == 80
    assert parses[0] == 3 and len(entries()) == len(before) + 1      # kept, then read back


_CHECK = """
import json, sys
from astral_dsl.cli import main
code = main(["check", sys.argv[1]])
print(json.dumps({"code": code, "lark": "lark" in sys.modules}))
"""


def test_a_small_files_check_starts_without_lark_once_its_tree_is_cached(tmp_path):
    small = tmp_path / "small.astral"
    small.write_text(_design(3), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), ASTRAL_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _CHECK, str(small)], capture_output=True,
                             text=True, cwd=REPO, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(json.loads(out.stdout.splitlines()[-1]))
    assert runs == [{"code": 0, "lark": True}, {"code": 0, "lark": False}]
