"""What `astral calibrate` costs as a table grows by repeats: a100.csv's 14 runs given N times
(ids of their own, the same configurations), fitted and left out as the command does
(runs/accuracy.calibrate): rows, configurations, forecasts (Seer's iteration() and run()) and
CPU seconds. The forecasts, compiles and validations follow the configurations, not the rows
(runs/configs.py); what still grows with the rows is reading and expressing them
(runs/evaluate.prepare).

    python benchmarks/bench_calibrate.py [N ...]      (default: 3 20)
"""
from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from astral_dsl.runs.accuracy import calibrate  # noqa: E402
from astral_dsl.runs.configs import configurations  # noqa: E402
from astral_dsl.runs.fit import rows_of  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import RUN_FILES  # noqa: E402

forecast = importlib.import_module("astral_dsl.seer.forecast")


def repeated(times: int, directory: Path, table: str = "a100") -> Path:
    """The shipped runs table `table` (a100.csv, modern.csv) with its rows `times` over, each
    copy's ids suffixed `_k`."""
    header, *lines = Path(RUN_FILES[table]).read_text(encoding="utf-8").splitlines()
    out = [header] + [f"{line.split(',', 1)[0]}_{k},{line.split(',', 1)[1]}"
                      for k in range(1, times + 1) for line in lines if line.strip()]
    path = directory / f"{table}x{times}.csv"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def repeats(argv, default, table: str = "a100"):
    """`table` (a100.csv) N times over (`repeated`) for each N of `argv` (default: `default`),
    in a folder removed once they are all read."""
    with tempfile.TemporaryDirectory() as d:
        for times in [int(a) for a in argv] or default:
            yield repeated(times, Path(d), table)


def counting(patch=setattr) -> dict:
    """Seer's iteration() and run() counted from now on (`patch`: setattr, or a test's
    monkeypatch.setattr, which puts them back): {name: calls}."""
    calls = {"iteration": 0, "run": 0}
    for name in calls:
        real = getattr(forecast, name)

        def wrapped(*args, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(*args, **kw)

        patch(forecast, name, wrapped)
    return calls


def main(argv) -> None:
    calls = counting()
    print(f"{'table':<10} {'rows':>6} {'configs':>8} {'iteration()':>12} {'run()':>7} "
          f"{'CPU s':>7}")
    for path in repeats(argv, [3, 20]):
        tables = [(path.stem, read_table(path))]
        configs = len(configurations([r.prepared for r in rows_of(tables)[0]])[1])
        calls.update(iteration=0, run=0)
        t0 = time.process_time()
        doc = calibrate(tables)[0]
        cpu = time.process_time() - t0
        rows = sum(s["rows"] for s in doc["sets"].values())
        print(f"{path.stem:<10} {rows:>6,} {configs:>8,} {calls['iteration']:>12,} "
              f"{calls['run']:>7,} {cpu:>7.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
