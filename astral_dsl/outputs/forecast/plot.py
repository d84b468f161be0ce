"""A forecast's timeline as a Gantt chart (matplotlib)."""
from __future__ import annotations

from typing import Dict, List, Tuple

from astral_dsl.seer.timeline import STREAM_NAMES, STREAM_ORDER, count, events

COLOURS = {"gemm": "#4C72B0", "attention": "#8172B2", "elementwise": "#64B5CD",
           "norm": "#8C8C8C", "recompute": "#CCB974", "comm": "#C44E52", "p2p": "#DD8452",
           "optimizer": "#55A868", "forward": "#4C72B0", "backward": "#8172B2"}


def plot(fc, path: str, window=None) -> None:
    """A Gantt chart of the iteration (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    level = "op" if count(fc, "op", window) <= 60_000 else "layer" \
        if count(fc, "layer", window) <= 60_000 else "block"
    rows: Dict[Tuple[int, str], List[Tuple[float, float, str]]] = {}
    for ev in events(fc, window, level):
        rows.setdefault((ev.stage, ev.stream), []).append((ev.start, ev.end - ev.start, ev.cat))
    keys = sorted(rows, key=lambda k: (k[0], STREAM_ORDER.index(k[1])))
    fig, ax = plt.subplots(figsize=(14, max(3.0, 0.28 * len(keys) + 1.5)))
    for y, key in enumerate(keys):
        by_cat: Dict[str, list] = {}
        for s, d, cat in rows[key]:
            by_cat.setdefault(cat, []).append((s, d))
        for cat, bars in by_cat.items():
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=COLOURS.get(cat, "#999999"))
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"stage {s} {STREAM_NAMES[t]}" for s, t in keys], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"{fc.job.name}: {fc.iteration_time:.3f} s per iteration, MFU {fc.mfu:.1%}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    seen = {cat for rs in rows.values() for _, _, cat in rs}
    ax.legend([h for h, c in zip(handles, COLOURS) if c in seen], [c for c in COLOURS if c in seen],
              loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
