"""Two faults at once: `astral synth` injects several (`--fault` repeated, `--part` and
`--severity` paired with them in order), the generator holds several flapping links, and the
diagnosis names the second fault once the first one's slow instances leave every unit's
background (diagnose/background.py, Factors.explain)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.synth import Fault, Noise, generate, write
from astral_dsl.synth.inject import random_fault
from astral_dsl.synth.network import Net
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"
NIC = "Small.racks[2].hosts[0].nics[1].port[a]"          # seed 0's draws, in this order
FLAP = "Small.racks[0].hosts[1].nics[1].port[a] -- Small.fabric.rail[1].plane[A].tor[0]"


@pytest.fixture(scope="module")
def small():
    design = astral_dsl.load(str(SMALL))
    return design, seer.forecast(design), diagnose.rank_map(design)


def _synth(tmp_path, *args):
    return astral("synth", SMALL, "-o", tmp_path / "drill.csv", *args, cwd=REPO)


def test_synth_injects_every_fault_asked_in_order(tmp_path, small):
    """Each --fault is drawn after the one before from the seed's generator (the first as a
    drill of one fault draws it); JSON gives `fault` (the first, as before) and `faults`
    (every one), the text lists each; --part and --severity go with the --fault of their
    place."""
    _, fc, rm = small
    rng = np.random.default_rng(0)
    nic, flap = (random_fault(k, rm, fc, rng, 0, 6) for k in ("nic_port", "link_flap"))
    assert (nic.part, flap.part) == (NIC, FLAP)
    p = _synth(tmp_path, "--fault", "nic_port", "--fault", "link_flap", "--iterations", "6",
               "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["faults"] == [nic.to_json(), flap.to_json()] and doc["fault"] == nic.to_json()
    p = _synth(tmp_path, "--fault", "nic_port", "--fault", "link_flap", "--iterations", "6")
    assert p.returncode == 0 and p.stdout.endswith(
        f"injected: nic_port {NIC} (severity 0.5), link_flap {FLAP} (severity "
        f"{flap.severity:g})\n")
    gpu = "Small.racks[1].hosts[2].gpus[5]"
    p = _synth(tmp_path, "--fault", "gpu", "--part", gpu, "--severity", "0.3",
               "--fault", "nic_port", "--part", NIC, "--severity", "0.25", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert [(f["kind"], f["part"], f["severity"]) for f in json.loads(p.stdout)["faults"]] \
        == [("gpu", gpu, 0.3), ("nic_port", NIC, 0.25)]


@pytest.mark.parametrize("args, said", [
    (["--fault", "gpu", "--fault", "nic_port", "--part", NIC],
     "--part: 1 given for 2 --fault: one for each --fault, in their order, or none"),
    (["--fault", "gpu", "--severity", "0.2", "--severity", "0.3"],
     "--severity: 2 given for 1 --fault"),
    (["--fault", "none", "--fault", "gpu"], "--fault none is a healthy run"),
    (["--fault", "nic_port", "--fault", "nic_port", "--part", NIC, "--part", NIC],
     f"`{NIC}` is drilled twice"),
    (["--fault", "gpu", "--fault", "nic_port", "--severity", "0.2", "--severity", "2"],
     "--severity: nic_port: the part's rate is multiplied by it: at most 1")])
def test_faults_that_do_not_pair_are_a_usage_error(tmp_path, args, said):
    p = _synth(tmp_path, *args)
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "drill.csv").exists()


def test_two_flapping_links_each_flap_in_their_own_windows(small):
    """A mask holds a bit per flapping link (Net.flaps in the faults' order); a transfer is
    slowed by the slowest of the links it crosses that are bad when it starts. A at half its
    rate over [0, 1) s, B at a quarter over [0.5, 2) s: at 0.75 s, crossing neither, A, B,
    both: 1, 2, 4, 4; at 1.5 s: 1, 1, 4, 4; at 3 s: none is bad. (The generator had kept the
    last flapping link only.)"""
    _, _, rm = small
    a = Fault("link_flap", "A", 0.5, 0, ((0.0, 1.0),))
    b = Fault("link_flap", "B", 0.25, 1, ((0.5, 2.0),))
    net = Net(rm, (a, b), 0)
    mask = np.array([0, 1, 2, 3])
    assert net.flap_factor(mask, np.full(4, 0.75)).tolist() == [1, 2, 4, 4]
    assert net.flap_factor(mask, np.full(4, 1.5)).tolist() == [1, 1, 4, 4]
    assert net.flap_factor(mask, np.full(4, 3.0)).tolist() == [1, 1, 1, 1]


def test_the_second_fault_is_named_once_the_firsts_instances_are_set_aside(small):
    """`--fault nic_port --fault link_flap --seed 0 --iterations 6`: of the N = 3,264 usable
    instances S = 60 look slowed, all 54 crossing the NIC port (at half rate) and 6 of the 54
    crossing the flapping link (a fifth of its rate, in four windows). The NIC is named first
    (ln BF 337). With e measured once, the flapping link's NIC had e = (60 - 6) / (3,264 - 54)
    = 1.68 %: the first fault's 54 slowed instances as its background, each slowed transfer
    worth at most ln(1 / 0.0168) = 4.1, ln BF 4.8 against the 9.17 needed to name one of
    the 168 classes (odds 19, the network's prior of 1/3): not named. With the NIC's 54
    explained instances left out of S and N, its e is (6 - 6) / (3,210 - 54): the 0.1 % floor,
    ln BF 20.8: named second."""
    design, fc, rm = small
    rng = np.random.default_rng(0)
    faults = [random_fault(k, rm, fc, rng, 0, 6) for k in ("nic_port", "link_flap")]
    data = generate(fc, rm, faults, Noise(), 6, 0)
    result = diagnose.diagnose(design, write.to_observed(data), job=fc.job.name)
    named = [s for s in result.suspects if not s.alternative]
    assert result.verdict == "suspects" and len(named) == 2
    assert named[0].covers(NIC) and named[1].covers(FLAP.split(" -- ")[0])
    assert named[1].supports.startswith("6 of the 54 collectives and transfers crossing it")
