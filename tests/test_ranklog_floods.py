"""A rank log of many unknown phase names (each row its own): the names were counted in a pass
over the whole column each (quadratic: 10,000 names 38 s, 100,000 past 120 s) and each said in a
W784 of its own. Now one pass, the first eight named and the rest in one W784."""
from __future__ import annotations

import time

from astral_dsl import observe


def test_many_unknown_phases_are_counted_once_and_said_in_nine_warnings(tmp_path):
    rows = [f"0,100,ph{i:05d},{i}.0,0.001,,\n" for i in range(20_000)]
    p = tmp_path / "job.csv"
    p.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n" + "".join(rows) +
                 "0,100,forward,1.0,3.0,,\n0,100,ph00003,2.5,0.5,,\n")
    start = time.thread_time()
    obs = observe.load([str(p)], workers=1)
    assert time.thread_time() - start < 10                  # about 0.3 s; 150 s before
    said = [d.message for d in obs.diagnostics if d.code == "W784"]
    assert said == [f"phase `ph{i:05d}` is not known ({1 + (i == 3)} row(s)): counted as "
                    f"`other`, neither compute nor communication" for i in range(8)] + [
        "19,992 more phases are not known (19,992 row(s)): counted as `other`, neither compute "
        "nor communication"]
    assert [d.code for d in obs.diagnostics] == ["W784"] * 9
