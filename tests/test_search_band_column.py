"""`astral search`'s band column is left-aligned: its cells carry a mark of one or two
characters (`*` outside the calibrated envelope, `^` beyond the calibration runs), and
right-aligned, a row marked `*` alone had its band a column to the right of those marked `*^`
(the README's table showed it)."""
from __future__ import annotations

from astral_dsl.explore import search
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.outputs import search as search_out
from astral_dsl.seer.envelope import marked

# 1,024 B200s: the fastest layouts run dp 512-1,024, beyond the shipped fit's runs (^), the
# next ones within them; B200/BF16 dense is outside the calibrated envelope (*) in every row
LAB = """
import stdlib.hardware { B200, CX7_400G, QM9700_NDR, HGX8 }
import stdlib.models { Llama3_70B }
host Node = HGX8(gpu = B200, nic = CX7_400G)
rack R { hosts = 4 x Node }
fabric Rails {
  rails = 8
  tier leaf  { switch = QM9700_NDR, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
pod Pod { racks = 16 x R }
site Lab { pods = 2 x Pod, fabric = Rails }
job train {
  model = Llama3_70B
  placement = Lab
  gpus = 1024
  parallel { tp = 8, pp = 4, dp = gpus / (tp * pp), sp = true }
  batch { global_batch = 1024, micro = 1, seq = 8192 }
}
"""


def test_the_band_column_lines_up_whatever_its_marks(tmp_path):
    path = tmp_path / "lab.astral"
    path.write_text(LAB, encoding="utf-8")
    result = search.run(str(path), top=5, engine=LocalEngine(1))
    marks = {("" if r["calibration"]["inside"] else "*") +
             ("^" if r["calibration"].get("extrapolated") else "") for r in result.rows}
    assert marks == {"*", "*^"}, marks          # both kinds of row are in the table
    lines = search_out.table(result, width=200).split("\n")
    header = next(i for i, line in enumerate(lines) if line.startswith("rank ") and "band" in line)
    at = lines[header].index("band")
    want = [marked(r["calibration"]) for r in result.rows]
    cells = [line[at:at + max(map(len, want))] for line in lines[header + 2:header + 7]]
    assert [c.rstrip() for c in cells] == want, cells
