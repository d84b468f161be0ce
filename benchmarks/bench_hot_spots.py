"""Product paths many tests (and users) share, each timed in process: prints CPU seconds (user +
system of this process, `time.process_time`), the median of RUNS runs after one warm-up run
(never asserted in tests). Run it on another checkout's code to compare:

    python benchmarks/bench_hot_spots.py                       # this checkout
    python benchmarks/bench_hot_spots.py /path/to/other/checkout

- `diagnose trial`: benchmarks/proof.py's trial on the single-pod example's 1,024-rank job, a
  NIC port slowed and a healthy run (what tests/test_diagnose.py's single-pod test does): the
  synthetic log read by the rank-log reader's column road (observe/ranklog.py), then diagnosed;
- `rank-log read`: that read alone (synth.write.to_observed of one run's log);
- `margins, again`: explore.margins.analyse of examples/tutorial_rack.astral, symbolic only,
  run a second time in the same process (the first run's figure beside it): the symbolic side's
  sets are kept by what was solved (explore/margins/symbolic.py);
- `validate_job at layouts`: seer.validate_job of the single-pod example's job at 16 layouts
  (tp and pp of 1-8, as a search's or a rule's candidates ask), the job's cluster read from the
  design once per GPU count (seer/cluster.py);
- `engineering of a recompiled design`: analyses.engineering.analyse of examples/
  gb200_nvl72.astral (a site with a climate file: its circuits' 8,760 hours) on a design
  compiled again before each run (not timed), as a margins probe or a sweep's point is: the
  circuits' hours are kept by their inputs (analyses/site_loads.py);
- `token count`: syntax/parser.count_tokens (the bound every text past 250,000 characters is
  held to before it is parsed: E108) of a text of the formatter's 16 MiB cap that is one
  statement and blanks (tests/test_cli_robust.py's `astral fmt -`), and of the reference
  design 40 times over (539,000 characters of ordinary text);
- `DOT quoting`: a picture's node given the tooltip and edge label of a text of 4,000
  backslashes, and of 4,000 characters of quotes, backslashes, `&` and `<>` mixed
  (outputs/render/labels.py: dot_tooltip, dot_label, quoted by the canvas's graph, labels.Dot
  where the checkout has it, else graphviz.Digraph, whose quoting is quadratic in a run of
  backslashes).
- `small files compiled`: astral_dsl.compile of 100 distinct designs of 300-2,000 characters
  from disk (a suite's or a sweep's own files), then of the same again, in a process that has
  Lark imported, with a user cache of its own: under semantics/modules.SMALL_TREE characters
  each is parsed, its tree neither looked up nor written.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _median(fn, runs: int = RUNS) -> float:
    fn()
    return statistics.median(_cpu(fn) for _ in range(runs))


def main(argv) -> None:
    # astral_dsl and benchmarks.proof of this checkout (or of the one named), not an installed copy
    sys.path.insert(0, str(Path(argv[0]).resolve() if argv else ROOT))
    import astral_dsl
    from astral_dsl import diagnose, seer
    from astral_dsl.synth import generate, write
    from benchmarks.proof import trial

    print(f"astral_dsl from {Path(astral_dsl.__file__).parent}")
    design = astral_dsl.load(str(ROOT / "examples" / "single_pod.astral"))
    fc = seer.forecast(design)
    rm = diagnose.rank_map(design)

    def two_trials():
        for kind, seed in (("nic_port", 11), ("none", 12)):
            trial(design, fc, rm, kind, seed, "memory")
    print(f"diagnose trial (2 runs, 1,024 ranks): {_median(two_trials):.3f} s")

    data = generate(fc, rm, [], seed=12)
    print(f"rank-log read ({sum(len(t) for t in write.to_observed(data).traces):,} rows): "
          f"{_median(lambda: write.to_observed(data)):.3f} s")

    from astral_dsl.explore import margins
    path = str(ROOT / "examples" / "tutorial_rack.astral")
    first = _cpu(lambda: margins.analyse(path, numeric=False))
    again = statistics.median(_cpu(lambda: margins.analyse(path, numeric=False))
                              for _ in range(RUNS))
    print(f"margins of {Path(path).name}, symbolic only: first {first:.3f} s, "
          f"again {again:.3f} s")

    job = design.jobs[0]
    n = fc.gpus
    layouts = [dict(tp=tp, pp=pp, dp=n // (tp * pp)) for tp in (1, 2, 4, 8)
               for pp in (1, 2, 4, 8)]
    validated = _median(lambda: [seer.validate_job(design, job, **o) for o in layouts])
    print(f"validate_job at {len(layouts)} layouts of {n:,} GPUs: {1e3 * validated:.1f} ms")

    from astral_dsl.analyses import engineering
    from astral_dsl.workspace import Workspace
    ws = Workspace.open(str(ROOT / "examples" / "gb200_nvl72.astral"), {})
    designs = [ws.compile() for _ in range(RUNS + 1)]
    print(f"engineering of a recompiled design ({Path(ws.design.file).name}): "
          f"{1e3 * _median(lambda: engineering.analyse(designs.pop())):.1f} ms")

    from astral_dsl.syntax.parser import MAX_TOKENS, count_tokens
    blanks = "param x =   1\n" + " " * (16 * 1024 * 1024 - 14)
    ordinary = (ROOT / "examples" / "astral.astral").read_text(encoding="utf-8") * 40
    for name, text in (("one statement and blanks", blanks), ("the reference x 40", ordinary)):
        print(f"token count of {len(text):,} characters, {name}: "
              f"{_median(lambda: count_tokens(text, MAX_TOKENS)):.3f} s")

    import graphviz

    from astral_dsl.outputs.render import labels
    graph = getattr(labels, "Dot", graphviz.Digraph)
    for name, text in (("backslashes", "\\" * 4000), ("mixed", 'a\\"&<>\\\\' * 500)):
        def quoted():
            graph().node("a", tooltip=labels.dot_tooltip(text), label=labels.dot_label(text))
        print(f"DOT quoting of a node of 4,000 {name} ({graph.__name__}): {_median(quoted):.3f} s")
    _small_files()


def _small_files() -> None:
    import tempfile

    import astral_dsl
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ASTRAL_CACHE_DIR"] = str(Path(tmp) / "cache")
        paths = []
        for i in range(100):
            racks = "".join(f"    rack r{j} {{ power = {j + 1} kW }}\n" for j in range(i % 50))
            path = Path(tmp) / f"d{i}.astral"
            path.write_text(f"// design {i}\nsite S {{\n    power = {i + 100} kW\n{racks}}}\n",
                            encoding="utf-8")
            paths.append(str(path))
        astral_dsl.compile(str(ROOT / "examples" / "tutorial_rack.astral"))   # Lark imported
        sizes = [os.path.getsize(p) for p in paths]
        first = _cpu(lambda: [astral_dsl.compile(p).design for p in paths])
        again = _cpu(lambda: [astral_dsl.compile(p).design for p in paths])
        del os.environ["ASTRAL_CACHE_DIR"]
    print(f"small files compiled ({len(paths)} of {min(sizes):,}-{max(sizes):,} characters): "
          f"first {first:.3f} s, again {again:.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
