"""Language-server benchmark: one didChange of many ranges, as an editor's replace-all sends it
(one range per match), applied as the server applies them (lsp/protocol.py: `fit_range`, then
`splice` into one list of lines), beside `edited` on the whole text, range after range (what
each range cost before: 2 ms a range in a file of 5,000 lines, over a minute for 20,000).

    python benchmarks/bench_lsp_replace_all.py --lines 5000 --ranges 20000
"""
from __future__ import annotations

import argparse
import time

from lsprotocol import types as lsp

from astral_dsl.lsp.protocol import edited, fit_range, lsp_lines, splice


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--ranges", type=int, default=20000)
    args = parser.parse_args()
    text = "".join(f"let v{i} = {i} kW\n" for i in range(args.lines))
    ranges = [lsp.Range(start=lsp.Position(line=i % args.lines, character=4),
                        end=lsp.Position(line=i % args.lines, character=5))
              for i in range(args.ranges)]
    lines, start = lsp_lines(text), time.perf_counter()
    for rng in ranges:
        splice(lines, fit_range(lines, rng, utf16), "w", utf16)
    spliced = time.perf_counter() - start
    whole, start = text, time.perf_counter()
    for rng in ranges[:min(len(ranges), 500)]:           # a sample: it is quadratic
        whole = edited(whole, fit_range(lsp_lines(whole), rng, utf16), "w", utf16)
    per_range = (time.perf_counter() - start) / min(len(ranges), 500)
    print(f"{args.ranges:,} ranges in {args.lines:,} lines: spliced in {spliced:.3f} s; "
          f"the whole text each time: {per_range * 1000:.2f} ms a range, about "
          f"{per_range * args.ranges:.1f} s")


if __name__ == "__main__":
    main()
