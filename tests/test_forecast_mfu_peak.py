"""`astral forecast`'s MFU line names the peak it is measured against and its value, as the GPU
declares it: an fp8 job's MFU is against the fp8 peak (docs/seer.md), which the line did not say
("model FLOPs / peak" read as the bf16 one); and a job that states neither `gpus` nor `dp`
has a note saying it runs on tp x pp x cp of its placement's GPUs, not all of them."""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.outputs.forecast import report

LAB = """
import stdlib.hardware { B200, CX7_400G, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = B200, nic = CX7_400G)
rack R { hosts = 2 x Node }
site Lab { racks = 1 x R }
job train {
  model = Llama3_8B
  placement = Lab
  gpus = 16
  dtype = DTYPE
  parallel { tp = 8, pp = 1, dp = 2 }
  batch { global_batch = 32, micro = 1, seq = 4096 }
}
"""


@pytest.mark.parametrize("dtype, peak", [("bf16", "bf16 peak, 2,250 TFLOP/s a GPU"),
                                         ("fp8", "fp8 peak, 4,500 TFLOP/s a GPU"),
                                         ("mxfp8", "fp8 peak, 4,500 TFLOP/s a GPU")])
def test_the_mfu_line_names_its_peak(dtype, peak, tmp_path):
    path = tmp_path / "lab.astral"
    path.write_text(textwrap.dedent(LAB).replace("DTYPE", dtype), encoding="utf-8")
    fc = seer.forecast(astral_dsl.load(str(path)))
    [line] = [x for x in report.render(fc).split("\n") if x.startswith("  MFU ")]
    assert line.endswith(f"  model FLOPs / {peak}"), line
    # the figure is the model's FLOPs over that peak
    rate = float(peak.split(", ")[1].split()[0].replace(",", "")) * 1e12
    assert fc.mfu == pytest.approx(seer.model_flops(fc.job) / (rate * fc.gpus * fc.iteration_time))


@pytest.mark.parametrize("parallel, noted", [("tp = 8, pp = 1", True),
                                             ("tp = 8, pp = 1, dp = 2", False)])
def test_a_job_stating_neither_gpus_nor_dp_is_noted(parallel, noted, tmp_path):
    # `parallel { tp = 8 }` alone ran on 8 of the placement's 16 GPUs, said only by the
    # forecast's first line ("on 8 x B200")
    text = (textwrap.dedent(LAB).replace("DTYPE", "bf16").replace("  gpus = 16\n", "")
            .replace("tp = 8, pp = 1, dp = 2", parallel))
    path = tmp_path / "lab.astral"
    path.write_text(text, encoding="utf-8")
    fc = seer.forecast(astral_dsl.load(str(path)))
    said = [n for n in fc.notes if n.startswith("neither `gpus` nor `dp` stated")]
    if not noted:
        assert not said and fc.gpus == 16
        return
    assert fc.gpus == 8
    assert said == ["neither `gpus` nor `dp` stated: dp 1, so the job runs on tp x pp x cp = "
                    "8 x 1 x 1 = 8 GPUs of its placement, not all of them: state `gpus` "
                    "(dp = gpus / (tp x pp x cp)) or `dp`"]
    assert "  note       " + said[0] in report.render(fc)
