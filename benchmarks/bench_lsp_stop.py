"""Language-server benchmark: the CPU the server spends after it answered requests that ran out
of time. A project of FILES other files, each a few seconds of evaluation, and three
`textDocument/references` requests under `astral lsp --timeout 1`: each answers RequestFailed
after 1 s, and its project scan (compiles of the other files, in the server's own thread)
should stop with it (astral_dsl/cancel.py). Prints the server's CPU during the requests and
after the last answer, until it is idle (no CPU for 5 s, at most 90 s).

    python benchmarks/bench_lsp_stop.py

Reads /proc (Linux). The server is this checkout (PYTHONPATH is set to it)."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
FILES = 4
# ~2 million evaluation steps a file (8 sums over 90,000 elements): E409 stops it there
SLOW = "".join(f"let x{k} = sum([i * 1 W + 2 W for i in 0..90000])\n" for k in range(8))


def cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    os.environ["PYTHONPATH"] = str(ROOT)
    from test_lsp_hardening import SMALL, Client

    root = Path(tempfile.mkdtemp())
    (root / "astral.toml").write_text("")
    for j in range(FILES):
        (root / f"other{j}.astral").write_text(SLOW + f"gpu G{j} {{ power = 1 W }}\n")
    client = Client(root, "--timeout", "1")
    try:
        client.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                      "capabilities": {}})
        uri = (root / "main.astral").as_uri()
        client.open(uri, SMALL)
        at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 4}}
        client.request("textDocument/hover", at)
        before = cpu(client.proc.pid)
        for _ in range(3):
            r = client.request("textDocument/references",
                               dict(at, context={"includeDeclaration": True}))
            print("answer:", (r.get("error") or {}).get("message") or "a result")
        answered, start = cpu(client.proc.pid), time.monotonic()
        last, busy = answered, start
        while time.monotonic() - start < 90:
            time.sleep(1)
            now = cpu(client.proc.pid)
            if now > last:
                last, busy = now, time.monotonic()
            elif time.monotonic() - busy > 5:
                break
        print(f"server CPU during the requests {answered - before:.1f} s; after the last "
              f"answer {last - answered:.1f} s, busy for {busy - start:.0f} s after it")
    finally:
        client.close()


if __name__ == "__main__":
    main()
