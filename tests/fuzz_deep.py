"""The fuzz targets that reach past the front end (tests/fuzzing.py runs them with the others):

- `forecast-rule`: jobs mutated where Seer's rules decide (no `micro`, `recompute = auto`,
  interleaved schedules with or without `virtual_stages`, odd batches and degrees, precisions,
  sharding), checked and forecast; besides the usual invariant, a job `astral check` passes
  must forecast (exit 0);
- `margins`: a number of a field made a `param` (any field), then `astral check --margins`;
- `diff-rev`: two mutated designs committed to a scratch git repository, with links in and out
  of it, then `astral diff` between revisions (hostile revision names included); a file outside
  the repository must never show;
- `observed`: rank logs (CSV, JSON Lines) with values of every odd kind, and profiler traces
  with odd values (tests/trace_documents.py) or mutated bytes (tests/fuzz_traces.py), diagnosed
  against a small job by `astral diagnose`;
- `runs`: runs tables (`astral runs`) of shipped rows with mutated cells, rows and headers
  (tests/fuzz_runs.py);
- `lsp-cancel`: sequences of edits, hovers and cancelled requests sent to a real language
  server (`astral lsp`, one per campaign) at random moments: no publication may hold E000, the
  server must stay up, and the last version is published as `astral check` reports it.

Every target takes (path of the mutated file, its text, the campaign's random generator) and
raises fuzz_common.Failure (or anything else) when the invariant does not hold."""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import fuzz_runs
from fuzz_common import JOB_SEED, SEEDS, WALL_S, Failure, _cli, _cli_rc, mutate

_VALID: Dict[str, List[str]] = {}


def valid_seeds(jobs: bool = False) -> List[str]:
    """The seeds that compile and check without an error (with a job, for `jobs`): mutations
    of them reach the analyses, not only the parser. Computed once, on first use."""
    key = "jobs" if jobs else "all"
    if key == "jobs" and key not in _VALID and "all" in _VALID:   # checked already: with a job
        _VALID[key] = [text for text in _VALID["all"] if re.search(r"^job \w+", text, re.M)] \
            or [JOB_SEED]
    if key not in _VALID:
        import astral_dsl

        out = []
        for text in SEEDS:
            if jobs and not re.search(r"^job \w+", text, re.M):
                continue
            try:
                ws = astral_dsl.compiles(text, name="seed.astral")
                if not any(d.is_error for d in astral_dsl.check(ws).diagnostics):
                    out.append(text)
            except Exception:  # noqa: BLE001 - a seed that does not check is left out
                continue
        _VALID[key] = out or [JOB_SEED]
    return _VALID[key]


# ---- forecast with Seer's rules --------------------------------------------------------------
_FIELD = r"(?<![\w.]){}\s*=\s*[^,;}}\n]+"


def _set_field(rng: random.Random, text: str, name: str, value: str, record: str) -> str:
    """`name = value` in place of the job's own, else added to its `record` (or the job)."""
    pattern = re.compile(_FIELD.format(re.escape(name)))
    found = list(pattern.finditer(text))
    if found:
        m = rng.choice(found)
        return text[:m.start()] + f"{name} = {value}" + text[m.end():]
    m = re.search(rf"\b{record} \{{", text) if record else None
    if m is None:
        m = re.search(r"^job \w+ \{", text, re.M)
    if m is None:
        return text
    return text[:m.end()] + f" {name} = {value}," + text[m.end():]


def mutate_job(rng: random.Random, text: str) -> str:
    """One to four edits of a job where Seer's rules choose (module docstring): mostly a
    layout that holds together (the degrees multiply to `gpus`, the batch divides), so that
    the rules, not the validation, see them; now and then anything."""
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(14)
        if op == 0:                                   # leave the micro-batch to the rule
            text = re.sub(r"(?<![\w.])micro\s*=\s*[^,;}\n]+[,;]?", "", text, count=1)
        elif op == 1:
            text = _set_field(rng, text, "recompute", rng.choice(["auto", "full", "selective",
                                                                  "none"]), "")
        elif op in (2, 3):
            text = _set_field(rng, text, "schedule", rng.choice(["interleaved", "interleaved",
                                                                 "1f1b", "gpipe"]), "parallel")
            if rng.random() < 0.5:
                text = _set_field(rng, text, "virtual_stages", str(rng.randint(1, 6)),
                                  "parallel")
            elif rng.random() < 0.5:
                text = re.sub(r"(?<![\w.])virtual_stages\s*=\s*[^,;}\n]+[,;]?", "", text)
        elif op in (4, 5, 6):                         # a layout of the job's own GPUs
            m = re.search(r"(?<![\w.])gpus\s*=\s*(\d+)", text)
            n = int(m.group(1)) if m else 8
            tp = rng.choice([d for d in (1, 2, 4, 8) if n % d == 0] or [1])
            pp = rng.choice([d for d in (1, 2, 3, 4, 5, 8, 16) if (n // tp) % d == 0] or [1])
            for name, value in (("tp", tp), ("pp", pp), ("dp", n // (tp * pp)), ("cp", 1)):
                text = _set_field(rng, text, name, str(value), "parallel")
        elif op in (7, 8):
            m = re.search(r"(?<![\w.])dp\s*=\s*(\d+)", text)
            dp = int(m.group(1)) if m else 1
            text = _set_field(rng, text, "global_batch", str(dp * rng.choice(
                [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 96, 255, 256])), "batch")
        elif op == 9:
            text = _set_field(rng, text, "micro", str(rng.choice([1, 2, 3, 4, 8])), "batch")
        elif op == 10:
            text = _set_field(rng, text, "zero", str(rng.randint(0, 3)), "parallel")
        elif op == 11:
            text = _set_field(rng, text, rng.choice(["dtype", "attention"]), rng.choice(
                ["fp8", "bf16", "fp16", "flash", "unfused"]), "")
            if rng.random() < 0.3:                    # the weights held quantised, or not
                text = _set_field(rng, text, "fp8_params", rng.choice(["true", "false"]), "")
        elif op == 12:
            text = _set_field(rng, text, rng.choice(["tp", "pp", "dp", "cp", "ep", "gpus",
                                                     "global_batch", "micro"]),
                              str(rng.choice([0, 1, 3, 7, 64, 10 ** 6])), "parallel")
        else:
            text = mutate(rng, text)
    return text


def _forecast_rule(path: Path, text: str, rng: random.Random) -> None:
    text = mutate_job(rng, rng.choice(valid_seeds(jobs=True)))
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    checked = json.loads(_cli(["check", "--format", "json", str(path)]).strip() or "{}")
    rc, out = _cli_rc(["forecast", str(path)])
    errors = [d for d in checked.get("diagnostics", []) if d.get("severity") == "error"]
    if checked.get("diagnostics") is not None and not errors and rc != 0:
        raise Failure(f"check passes, forecast exits {rc}: {_first_line(out)}")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("error"):
            return re.sub(r"`[^`]*`", "`X`", line)[:160]
    return text.strip()[:160]


# ---- margins -----------------------------------------------------------------------------------
_ASSIGNED = re.compile(r"(?<![\w.])([a-z_]+)(\s*=\s*)(-?\d[\d_.eE]*(?:\s*[A-Za-z/%][\w/%^]*)?)")


def parametrize(rng: random.Random, text: str) -> str:
    """A field's number made a top-level `param` of the same value (any field)."""
    found = [m for m in _ASSIGNED.finditer(text) if m.group(1) not in ("param", "let")]
    if not found:
        return text
    for k in range(rng.randint(1, 3)):
        m = rng.choice(found)
        name = f"fz_{m.group(1)}_{k}"
        text = f"param {name} = {m.group(3)}\n" + text[:m.start(3)] + name + text[m.end(3):]
        found = [x for x in _ASSIGNED.finditer(text) if x.group(1) not in ("param", "let")]
        if not found:
            break
    return text


def _margins(path: Path, text: str, rng: random.Random) -> None:
    limited = [t for t in valid_seeds() if re.search(r"check |power_limit|capacity", t)]
    text = parametrize(rng, text if rng.random() < 0.2 else rng.choice(limited))
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _cli(["check", "--margins", "--format", rng.choice(["json", "human"]), str(path)])


# ---- diff between revisions ----------------------------------------------------------------
SECRET = "LEAKED_OUTSIDE_THE_REPOSITORY"
_GIT_ENV = {"GIT_AUTHOR_NAME": "f", "GIT_AUTHOR_EMAIL": "f@example.com",
            "GIT_COMMITTER_NAME": "f", "GIT_COMMITTER_EMAIL": "f@example.com",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
REVISIONS = ["HEAD", "HEAD~1", "HEAD~2", "HEAD^{tree}", "-x", "--output=/tmp/astral-fuzz-x",
             "nosuch", "@", "HEAD~999", "main", "HEAD^", "..", "HEAD~1^{commit}", ":", "-"]
PATHS = ["main.astral", "./main.astral", "lib/part.astral", "out.astral", "up.astral",
         "in.astral", "lib", "../main.astral", "missing.astral", "main.astral:x", ""]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **_GIT_ENV}, check=True,
                   capture_output=True, timeout=60)


def _repo(work: Path) -> Path:
    repo = work / "repo"
    if not (repo / ".git").exists():
        (repo / "lib").mkdir(parents=True, exist_ok=True)
        (work / "secret.astral").write_text(f"site {SECRET} {{ }}\n", encoding="utf-8")
        _git(repo, "init", "-q", "-b", "main")
        os.symlink(str(work / "secret.astral"), repo / "out.astral")     # absolute, outside
        os.symlink("../secret.astral", repo / "up.astral")               # relative, outside
        os.symlink("main.astral", repo / "in.astral")                    # inside
        (repo / "main.astral").write_text("site S { }\n", encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "start")
    return repo


def _diff_rev(path: Path, text: str, rng: random.Random) -> None:
    repo = _repo(path.parent)
    for _ in range(2):                               # two revisions: A, then B
        body = rng.choice(valid_seeds()) if rng.random() < 0.5 else text
        if rng.random() < 0.5:
            body = mutate(rng, body)
        if rng.random() < 0.3:
            body = f"import {rng.choice(['lib.part', 'out', 'up', 'in', 'lib'])}\n" + body
        (repo / "main.astral").write_text(body, encoding="utf-8", errors="surrogatepass")
        (repo / "lib" / "part.astral").write_text(mutate(rng, rng.choice(SEEDS)),
                                                  encoding="utf-8", errors="surrogatepass")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "step")
    sides = []
    for good in (["HEAD~1:main.astral", "HEAD~2:./main.astral", "HEAD:in.astral"],
                 ["HEAD:main.astral", "main.astral", "HEAD:lib/part.astral"]):
        r = rng.random()
        if r < 0.8:
            sides.append(rng.choice(good))                              # a pair that reads
        elif r < 0.85:
            sides.append(rng.choice(PATHS))                             # the work tree
        else:
            sides.append(f"{rng.choice(REVISIONS)}:{rng.choice(PATHS)}")
    args = ["diff", "--format", rng.choice(["json", "human"])]
    if rng.random() < 0.3:
        args += ["--set", rng.choice(["hosts_per_rack=5", "x=1", "limit=1 kW"])]
    here = os.getcwd()
    os.chdir(repo if rng.random() < 0.8 else repo / "lib")
    try:
        out = _cli(args + ["--", *sides])
    finally:
        os.chdir(here)
    if SECRET in out and all(":" in side for side in sides):   # a work-tree link is followed
        raise Failure("diff showed a file outside the repository")
    if os.path.exists("/tmp/astral-fuzz-x"):
        raise Failure("a revision reached git as an option")


# ---- rank logs and traces --------------------------------------------------------------------
OBSERVED_DESIGN = """\
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
site S { hosts = 2 x Node }
model M { layers = 8, hidden = 1024, heads = 16, vocab = 32000, seq = 2048, ffn = 4096 }
job j {
  model = M, placement = S, gpus = 16
  parallel { tp = 4, pp = 2, dp = 2 }
  batch { global_batch = 16, micro = 1 }
  recompute = selective
}
"""
PHASES = ["forward", "backward", "optimizer", "compute", "tp_comm", "dp_comm", "pp_comm",
          "comm", "memory", "other", "forward-send", "backward-recv", "grads-all-reduce",
          "warmup"]
ODD_VALUES = [2 ** 63, -2 ** 63, 2 ** 64 + 1, 2 ** 53 + 1, 1e308, -0.0, 0, 1e-320, "1e400",
              "nan", "inf", "-inf", "", None, True, [], {}, [1], {"a": 1}, "\u0000", "\ud800x",
              "9" * 5000, "x" * 70_000, "1_000", " 3 ", "0x10", "\u0663", 7.5, -1, "send"]


def _rank_log(rng: random.Random, path: Path) -> None:
    rows = []
    for rank in range(16):
        t = rng.uniform(0, 100)
        for it in range(3):
            for phase in ("forward", "backward", "dp_comm", "pp_comm", "optimizer"):
                d = rng.uniform(0, 0.1)
                row = {"rank": rank, "iteration": it, "phase": phase, "start_s": t,
                       "duration_s": d}
                if phase == "pp_comm":
                    row.update(peer=(rank + 8) % 16, op=rng.choice(["send", "recv"]))
                rows.append(row)
                t += d
    for _ in range(rng.choice([0, 1, 2, 5, 12])):      # odd values, anywhere
        row = rng.choice(rows)
        row[rng.choice(list(row) + ["peer", "op", "extra"])] = rng.choice(
            ODD_VALUES + PHASES)
    if rng.random() < 0.5:
        lines = [json.dumps(r) if rng.random() > 0.02 else json.dumps(r)[:rng.randrange(40)]
                 for r in rows]
        data = "\n".join(lines) + "\n"
        path = path.with_suffix(".jsonl")
    else:
        cols = ["rank", "iteration", "phase", "start_s", "duration_s", "peer", "op"]
        rng.shuffle(cols) if rng.random() < 0.2 else None
        lines = [",".join(cols)] + [",".join(_csv(r.get(c)) for c in cols) for r in rows]
        data = "\n".join(lines) + "\n"
        path = path.with_suffix(".csv")
    if rng.random() < 0.2:
        cut = rng.randrange(len(data) + 1)
        data = data[:cut]
    path.write_text(data, encoding="utf-8", errors="surrogatepass")
    return path


def _csv(v) -> str:
    if v is None:
        return ""
    s = json.dumps(v) if isinstance(v, (list, dict, bool)) else str(v)
    return '"' + s.replace('"', '""') + '"' if "," in s or '"' in s or "\n" in s else s


def _trace(rng: random.Random, path: Path) -> Path:
    import fuzz_traces
    import trace_documents

    if rng.random() < 0.5:
        body, name = trace_documents.document(trace_documents.Seeded(rng.randrange(2 ** 32)))
    else:
        from test_trace_reader import _small

        body, name = fuzz_traces.mutate(rng, _small()), "rank-0.json"
    target = path.parent / "traces" / ("rank-%d.json" % rng.randrange(16))
    target.parent.mkdir(exist_ok=True)
    for old in target.parent.iterdir():
        old.unlink()
    target.write_bytes(body)
    return target.parent if rng.random() < 0.5 else target


def _observed(path: Path, text: str, rng: random.Random) -> None:
    design = path.parent / "observed_design.astral"
    if not design.exists():
        design.write_text(OBSERVED_DESIGN, encoding="utf-8")
    data = _rank_log(rng, path.with_name("ranks")) if rng.random() < 0.7 else _trace(rng, path)
    args = ["diagnose", str(design), "--observed", str(data)]
    if rng.random() < 0.3:
        args += ["--order", rng.choice(["tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "pp-dp-tp", "x"])]
    _cli(args + ["-o", str(path.parent / "diagnosis.json")])


# ---- the language server: edits and cancels ----------------------------------------------------
class _Server:
    """One `astral lsp` for a campaign (started on first use, closed by close())."""
    client = None
    root: Optional[Path] = None
    uris = 0


def _server(root: Path):
    from test_lsp_hardening import Client

    s = _Server
    if s.client is not None and (s.root != root or s.client.proc.poll() is not None):
        close()
    if s.client is None:
        s.client, s.root = Client(root), root
        r = s.client.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                            "capabilities": {}}, timeout=120)
        if "result" not in r:
            raise Failure("the language server did not initialise")
        s.client.notify("initialized", {})
    return s.client


def close() -> None:
    if _Server.client is not None:
        _Server.client.close()
    _Server.client = None


def _publications(client, uri: str) -> List[dict]:
    return [n["params"] for n in list(client.notes)
            if n.get("method") == "textDocument/publishDiagnostics"
            and n["params"].get("uri") == uri]


def _lsp_cancel(path: Path, text: str, rng: random.Random) -> None:
    import astral_dsl

    client = _server(path.parent)
    _Server.uris += 1
    doc = path.parent / f"doc{_Server.uris}.astral"
    doc.write_text("", encoding="utf-8")
    uri = doc.as_uri()
    version = 1
    current = mutate(rng, rng.choice(SEEDS))
    client.open(uri, current, version)
    pending = []
    for _ in range(rng.randint(1, 5)):
        time.sleep(rng.choice([0, 0.01, 0.05, 0.2, 0.5, 1.0]))
        if rng.random() < 0.4:                         # a request, maybe cancelled
            line = rng.randrange(current.count("\n") + 2)
            i = client.start(rng.choice(["textDocument/hover", "textDocument/completion",
                                         "textDocument/definition"]),
                             {"textDocument": {"uri": uri},
                              "position": {"line": line, "character": rng.randrange(40)}})
            if rng.random() < 0.6:
                client.notify("$/cancelRequest", {"id": i})
            pending.append(i)
        version += 1
        current = mutate(rng, current) if rng.random() < 0.8 else rng.choice(SEEDS)
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri,
                                                                   "version": version},
                                                  "contentChanges": [{"text": current}]})
    end = time.monotonic() + WALL_S / 2       # the server's work is its own process's CPU
    last = None
    while time.monotonic() < end:
        if client.proc.poll() is not None:
            raise Failure("the language server died")
        found = [p for p in _publications(client, uri) if p.get("version") == version]
        if found:
            last = found[-1]["diagnostics"]
            break
        time.sleep(0.02)
    for i in pending:                                   # every request is answered
        r = client.wait(i, timeout=max(1.0, end - time.monotonic()))
        if "error" in r and "Traceback" in json.dumps(r):
            raise Failure("a request's error carries a traceback")
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    codes = [d.get("code") for p in _publications(client, uri) for d in p["diagnostics"]]
    if "E000" in codes:
        raise Failure("E000 published: " + next(d["message"] for p in _publications(client, uri)
                                                 for d in p["diagnostics"]
                                                 if d.get("code") == "E000")[:120])
    if last is None:
        raise Failure("the last version was never published")
    got = sorted(str(d.get("code")) for d in last)
    if "E407" in got:
        return                                          # the deadline ran out: said so
    checked = astral_dsl.check(astral_dsl.compiles(current, name=str(doc), root=doc.parent))
    # the editor shows the accepted warnings too, as information (lsp/analysis.py)
    expected = sorted([d.code for d in checked.diagnostics]
                      + [a.diagnostic.code for a in checked.accepted])
    if got != expected:
        raise Failure(f"the server published {_codes(got)}, check says {_codes(expected)}")


def _codes(codes: List[str]) -> str:
    return ",".join(sorted(set(codes)))[:80]


TARGETS: Dict[str, object] = {
    "runs": fuzz_runs._runs,
    "forecast-rule": _forecast_rule,
    "margins": _margins,
    "diff-rev": _diff_rev,
    "observed": _observed,
    "lsp-cancel": _lsp_cancel,
}
