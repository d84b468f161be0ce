"""A worker's private copy of the project (explore/bundle.py) goes when the worker ends, in the
main process and in a worker of a forked process pool (the local engine's), which ends with
os._exit and runs no atexit hook: each such worker used to leave its folder in the temp dir."""
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from astral_dsl.explore import bundle
from astral_dsl.explore.bundle import Bundle, lay_out

BUNDLE = Bundle("main.astral", (("main.astral", b"// empty\n"),),
                (("main.astral", "main.astral"),))


def _laid_out_folder(b: Bundle) -> str:
    entry, _ = lay_out(b)
    assert entry.read_bytes() == b"// empty\n"
    return str(entry.parent.parent)           # the process's private temp folder


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the local engine forks only where the platform can")
def test_forked_pool_worker_removes_its_folder(monkeypatch):
    # as in a fresh client: a worker forked from a process that laid out nothing yet
    monkeypatch.setattr(bundle, "_TMP", None)
    monkeypatch.setattr(bundle, "_LAID_OUT", {})
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
