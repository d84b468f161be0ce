"""A worker's private copy of the project (explore/bundle.py) goes when the worker ends, in the
main process and in a worker of a forked process pool (the local engine's), which ends with
os._exit and runs no atexit hook: each such worker used to leave its folder in the temp dir.
While it runs, a worker keeps the copies of the KEEP_LAID_OUT designs it used last, never
removing one a task still reads."""
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import attrs
import pytest

from astral_dsl.explore import bundle
from astral_dsl.explore.bundle import Bundle, laid_out

BUNDLE = Bundle("main.astral", (("main.astral", b"// empty\n"),),
                (("main.astral", "main.astral"),))


def _laid_out_folder(b: Bundle) -> str:
    with laid_out(b) as (entry, _):
        assert entry.read_bytes() == b"// empty\n"
        return str(entry.parent.parent)           # the process's private temp folder


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the local engine forks only where the platform can")
def test_forked_pool_worker_removes_its_folder(monkeypatch):
    # as in a fresh client: a worker forked from a process that laid out nothing yet
    monkeypatch.setattr(bundle, "_TMP", None)
    monkeypatch.setattr(bundle, "_ON_DISK", bundle.OrderedDict())
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        folder = pool.submit(_laid_out_folder, BUNDLE).result()
        assert Path(folder).is_dir()
    assert not Path(folder).exists()


def test_main_process_removes_its_folder():
    code = ("from tests.explore.test_bundle import BUNDLE, _laid_out_folder;"
            "print(_laid_out_folder(BUNDLE))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    folder = out.stdout.strip()
    assert folder and not Path(folder).exists()


def test_a_sweep_ships_the_data_files_the_design_names(tmp_path):
    # A site's climate file and an inventory in the project are read by the checks after the
    # compile: the bundle carries them, so every point reads them as `astral check --set` does
    # (they were left out: E652 "climate file not found" and E230 on every point, locally too).
    # A text parameter's swept values name data files as well (other.epw is in no project).
    import shutil

    from astral_dsl.cli.common import checked
    from astral_dsl.explore import sweep
    from astral_dsl.explore.engines import LocalEngine
    from astral_dsl.outputs.size_report import size_summary
    from tests.test_plant import FIXTURES, PLANT

    shutil.copy(FIXTURES / "sample.epw", tmp_path / "hot.epw")
    (tmp_path / "fleet.csv").write_text("name,serial\nnowhere,SN9\n", encoding="utf-8")
    text = (PLANT.replace('"@CLIMATE@"', "city").replace("@LOOP@", "25 degC")
            .replace("@AIR@", "27 degC").replace("@REJECTION@", "dry_cooler")
            .replace("@ECONOMISER@", "integrated").replace("@CHILLER@", "chiller_cop = 5")
            .replace("hosts = 10 x H", "hosts = per_rack x H"))
    entry = tmp_path / "main.astral"
    entry.write_text('param per_rack = 10\nparam city = "hot.epw"\n' + text +
                     'inventory Fleet { file = "fleet.csv" }\n', encoding="utf-8")
    result = sweep.run(str(entry), ["per_rack=8,10", 'city="hot.epw","other.epw"'],
                       engine=LocalEngine(1))
    assert len(result.rows) == 4
    for row in result.rows:
        alone = checked(str(entry), row["params"])
        codes = [d["code"] for d in row["diagnostics"]]
        assert codes == [d.code for d in alone.diagnostics]
        assert ("E652" in codes) == (row["params"]["city"] == '"other.epw"')
        assert "E230" not in codes and "W231" in codes       # the row `nowhere` binds no part
        w231 = [d for d in row["diagnostics"] if d["code"] == "W231"][0]
        assert w231["file"] == str(tmp_path / "fleet.csv")  # the client's name, line 2
        assert w231["range"]["start"]["line"] == 2
        if alone.engineering is not None:
            summary = size_summary(alone.design, alone.engineering)
            assert row["metrics"]["facility_power_kw"] == summary["facility_power_kw"]
    assert "W643" in [d["code"] for d in result.rows[0]["diagnostics"]]   # 12 hours: read


def test_a_worker_of_another_version_refuses_the_work():
    # the engine checks the workers' versions when it connects; one that joins the cluster
    # later (a restarted or added worker) computed rows with its own code, unchecked

    with pytest.raises(RuntimeError, match="this worker runs astral_dsl .*, the client 0.0.1"):
        with laid_out(attrs.evolve(BUNDLE, version="0.0.1")):
            pass


def _design(i: int) -> Bundle:
    return Bundle("main.astral", (("main.astral", f"// design {i}\n".encode()),),
                  (("main.astral", "main.astral"),))


def test_a_worker_keeps_the_copies_of_the_designs_it_used_last(monkeypatch, tmp_path):
    monkeypatch.setattr(bundle, "_TMP", tmp_path)
    monkeypatch.setattr(bundle, "_ON_DISK", bundle.OrderedDict())
    monkeypatch.setattr(bundle, "KEEP_LAID_OUT", 2)
    roots = []
    for i in range(3):
        with laid_out(_design(i)) as (entry, _):
            roots.append(entry.parent)
    assert [r.exists() for r in roots] == [False, True, True]   # the least recently used went
    with laid_out(_design(1)):                                    # used again: the newest now
        pass
    with laid_out(_design(3)) as (entry, _):
        assert entry.read_bytes() == b"// design 3\n"
    assert [r.exists() for r in roots] == [False, True, False]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [_design(1).digest, _design(3).digest])


def test_a_copy_a_task_still_reads_is_not_removed(monkeypatch, tmp_path):
    # a Dask worker runs tasks on threads: one task's copy must outlive others' layouts
    monkeypatch.setattr(bundle, "_TMP", tmp_path)
    monkeypatch.setattr(bundle, "_ON_DISK", bundle.OrderedDict())
    monkeypatch.setattr(bundle, "KEEP_LAID_OUT", 1)
    with laid_out(_design(0)) as (held, _):
        for i in (1, 2):
            with laid_out(_design(i)) as (entry, _):
                assert held.read_bytes() == b"// design 0\n" and entry.exists()
        assert held.read_bytes() == b"// design 0\n"
        assert not (tmp_path / _design(1).digest).exists()    # beyond the bound once done
        assert not (tmp_path / _design(2).digest).exists()
    assert held.exists()                       # used last: kept
    assert [p.name for p in tmp_path.iterdir()] == [_design(0).digest]


def test_the_same_files_named_otherwise_share_one_copy(monkeypatch, tmp_path):
    monkeypatch.setattr(bundle, "_TMP", tmp_path)
    monkeypatch.setattr(bundle, "_ON_DISK", bundle.OrderedDict())
    other = attrs.evolve(BUNDLE, names=(("main.astral", "/elsewhere/main.astral"),))
    with laid_out(BUNDLE) as (first, names):
        written = first.stat().st_mtime_ns
        with laid_out(other) as (second, other_names):
            assert second == first and first.stat().st_mtime_ns == written   # not rewritten
            assert set(names.values()) == {"main.astral"}
            assert set(other_names.values()) == {"/elsewhere/main.astral"}
