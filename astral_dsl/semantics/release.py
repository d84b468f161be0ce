"""What a compile leaves behind once its design is frozen, let go of its references to one another.

The frames of a compile refer to one another and to themselves: a frame's field definitions hold
the environments they evaluate in, which name the frame (Env.frame) and the caller's environment
(Env.outer, Frame.asked_in), whose frame holds the child among its values; a module's scope holds
its templates and symbols, which name the scope; the instantiator holds its evaluator and its
frame view, which name it. None of it is needed once the design is frozen (semantics/freeze.py
copies what the design keeps into immutable instances), but every object of it sat in reference
cycles, so it stayed until a pass of the cyclic garbage collector walked it: about 1,460 objects a
compile of the single-pod example, left for every compile of a sizing's combinations, a margins
probe or a sweep's point. Letting go of those references frees them as the compile returns, by
their reference counts (the single-pod example compiled 50 times, the collector at its
default thresholds and its passes included: 0.225-0.230 -> 0.216-0.221 s of CPU, three
alternating rounds).

Only for a compile nobody asks further questions of: a compile given a trace (semantics/trace.py:
the language server's hover, the margins' shadows) keeps its instantiator and scopes for them."""
from __future__ import annotations

from typing import Dict


def release(ev, scopes: Dict[int, object]) -> None:
    """Let go of the references among the frames of instantiator `ev`, the module scopes of the
    compile (`scopes`) and `ev` itself. Each container is replaced by an empty one, never cleared
    in place (a dict a frame shares with anything else is left as it was)."""
    for frame in ev.frames:
        frame.defs, frame.values, frame.args = {}, {}, {}
        frame.checks, frame.actions, frame.done_actions = [], [], []
        frame.routes, frame.busy, frame.owned = {}, {}, {}
        frame.recipe = frame.pending = frame.asked_in = None
    for scope in scopes.values():
        scope.symbols, scope.own, scope.values = {}, {}, {}
    # the instantiator's parts that name it, and what holds frames; its counts stay readable
    # (Instantiator.steps: tests/test_limits.py)
    ev.expr = ev.view = ev.isolator = None
    ev.frames, ev.memo, ev.rollups, ev.asked, ev.unknown_sites = [], {}, {}, {}, {}
