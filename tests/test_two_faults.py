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



def test_a_pairs_slow_down_is_its_flows_worked_out_once(small, monkeypatch):
    """The slow-down and flapping mask of transfers (Net.pairs) and rings (Net.rings): per pair of
    ranks its flows' slowest 1 / rate and the flapping links they cross, each pair routed once
    however often the schedule sends between its ranks; a drill without slowed parts or
    flapping links routes no flow (every factor 1, no mask)."""
    _, _, rm = small
    flap = Fault("link_flap", FLAP, 0.5, 0, ((0.0, 1.0),))
    net = Net(rm, (Fault("nic_port", NIC, 0.25, 0, ()), flap), 0)
    n = len(rm.ranks)
    src = np.array([[r, r, (r + 3) % n] for r in range(n)])
    dst = np.array([[(r + 5) % n, (r + 5) % n, r] for r in range(n)])
    routed = []
    route = net.route
    monkeypatch.setattr(net, "route", lambda a, b: routed.append((a, b)) or route(a, b))
    static, mask = net.pairs(src, dst)
    assert len(routed) == len(set(routed))               # each pair once
    for pos in np.ndindex(src.shape):
        a, b = int(src[pos]), int(dst[pos])
        flows = [(min(net.rate.get(p, 1.0) for p in crossed),
                  sum(1 << i for i, f in enumerate(net.flaps) if f.part in crossed))
                 for crossed in route(a, b)] if net.crosses((a, b)) else []
        assert static[pos] == max([1.0] + [1.0 / r for r, _ in flows])
        assert int(mask[pos]) == int(np.bitwise_or.reduce([0] + [f for _, f in flows]))
    assert static.max() == 4.0 and mask.any()
    healthy = Net(rm, (), 0)
    monkeypatch.setattr(healthy, "route", lambda a, b: pytest.fail("routed"))
    static, mask = healthy.pairs(src, dst)
    assert (static == 1.0).all() and not mask.any()
    static, mask = healthy.rings(src)
    assert (static == 1.0).all() and not mask.any()

def test_the_second_fault_is_named_once_the_firsts_instances_are_set_aside(small):
    """`--fault nic_port --fault link_flap --seed 0 --iterations 6`: of the N = 3,264 usable
    instances S = 60 look slowed, all 54 crossing the NIC port (at half rate) and 6 of the 54
    crossing the flapping link (a fifth of its rate, in four windows; 7 between stop 54's
    refit and stop 63's, which moved the drill's timings). The NIC is named first (ln BF 337).
    With e measured once, the flapping link's NIC had e = (60 - 6) / (3,264 - 54) = 1.68 %: the
    first fault's 54 slowed instances as its background, each slowed transfer worth at most
    ln(1 / 0.0168) = 4.1, ln BF 4.8 against the 9.17 needed to name one of the 168 classes
    (odds 19, the network's prior of 1/3): not named. With the NIC's 54 explained instances
    left out of S and N, its e is (6 - 6) / (3,210 - 54): the 0.1 % floor, ln BF 20.8: named
    second."""
    design, fc, rm = small
    rng = np.random.default_rng(0)
    faults = [random_fault(k, rm, fc, rng, 0, 6) for k in ("nic_port", "link_flap")]
    data = generate(fc, rm, faults, Noise(), 6, 0)
    result = diagnose.diagnose(design, write.to_observed(data), job=fc.job.name)
    named = [s for s in result.suspects if not s.alternative]
    assert result.verdict == "suspects" and len(named) == 2
    assert named[0].covers(NIC) and named[1].covers(FLAP.split(" -- ")[0])
    assert named[1].supports.startswith("6 of the 54 collectives and transfers crossing it")


def test_each_named_suspect_is_weighed_in_the_round_that_names_it():
    """verdict.in_turn, by hand: three families, each hypothesis a priori at odds 1/3 (one
    hypothesis per family's prior). The network names two in order (round 0: ln BF ln 57 and
    ln 3; round 1, the first explained: the second at ln 57; round 2: the rest at ln 3), the
    compute family one (ln 30), the forecast's one unnamed hypothesis ln 1. Round 1: odds 19,
    1, 10 and 1/3 over 1 + 19 + 1 + 10 + 1/3 = 94/3: the network's first, 57/94. Round 2,
    it taken as real: 19, 10, 1/3 over 91/3: the network's second, 57/91 (it had 3/94 in
    round 1). Round 3: the network's rest 1, the GPU 10, 1/3 over 37/3: the GPU, 30/37."""
    from astral_dsl.diagnose import verdict

    ln = np.log
    net = ([([ln(57), ln(3)], np.array([])), ([0.0, ln(57)], np.array([])),
            ([0.0, 0.0], np.array([ln(3)]))], 1, 2, True)
    picks = verdict.in_turn([net, ([([ln(30)], np.array([]))], 1, 1, False),
                             ([([], np.array([0.0]))], 1, 0, False)], lambda f, i: (f, i))
    assert [(f, i) for f, i, _ in picks] == [(0, 0), (0, 1), (1, 0)]
    assert [p for _, _, p in picks] == pytest.approx([57 / 94, 57 / 91, 30 / 37], rel=1e-12)
    p, per, _ = verdict.weigh([(list(r[0]), r[1], 1) for r in (net[0][0],)]
                              + [([ln(30)], np.array([]), 1), ([], np.array([0.0]), 1)])
    assert picks[0][2] == per[0][0] and per[0][1] == pytest.approx(3 / 94, rel=1e-12)


def _weighed(small, monkeypatch, faults, its, seed):
    """The drill's diagnosis, and what it weighed: the network's Found (localise), the compute
    family's (compute.find) and the forecast's ln Bayes factors; and the posterior formula
    (prior odds 1/3 split over each family's hypotheses, "all healthy" 1) of suspect i of
    `bfs` with the network's suspects `taken` out, beside `rest` and the other families'."""
    from astral_dsl.diagnose import compute, localise

    design, fc, rm = small
    got = {}
    for mod, name in ((localise, "localise"), (compute, "find"),
                      (compute, "forecast_evidence")):
        def keep(*a, _f=getattr(mod, name), _n=name, **k):
            got[_n] = _f(*a, **k)
            return got[_n]
        monkeypatch.setattr(mod, name, keep)
    result = diagnose.diagnose(design, write.to_observed(generate(fc, rm, faults, Noise(), its,
                                                                  seed)), job=fc.job.name)
    net, gpu, fc_bf = got["localise"], got["find"], np.array(got["forecast_evidence"])

    def posterior(bfs, rest, i, taken):
        n_net, n_gpu = 3 * net.classes, 3 * gpu.units
        odds = [np.exp(b) / n_net for j, b in enumerate(bfs) if j not in taken]
        odds += list(np.exp(rest) / n_net) + list(np.exp(gpu.rest) / n_gpu)
        odds += list(np.exp(fc_bf) / (3 * 2))
        return np.exp(bfs[i]) / n_net / (1 + sum(odds))

    return result, net, gpu, fc_bf, posterior


def test_the_second_suspects_probability_is_its_rounds(small, monkeypatch, tmp_path):
    """The drill of the test above: the NIC port named first (ln BF 337), the flapping link's
    NIC second, at ln BF 4.8 in the first round and 20.8 once the first's 54 slowed instances
    are explained. Its probability had been the first round's, <1 % (e^6.8 against the
    first's e^337); it is now the posterior of the round that named it, with the first taken
    as real (out of the hypotheses): prior odds 1/3 over each family's hypotheses (168 classes
    of network units, 128 GPUs, 2 forecast hypotheses), its odds e^20.8 / 504 against the
    rest of that round (its next class at ln BF 13.1) and the other families': 0.982 (0.983
    between stop 54's refit and stop 63's, which moved the drill's timings: 6.8 and 25.6 then). The text says it is given suspect 1, the JSON's `given` names it. (With
    two named, the first is given the second too: test_two_clear_faults_both_read_near_
    certain.)"""
    import jsonschema

    from astral_dsl.outputs import diagnosis as out

    _, fc, rm = small
    rng = np.random.default_rng(0)
    faults = [random_fault(k, rm, fc, rng, 0, 6) for k in ("nic_port", "link_flap")]
    result, net, gpu, fc_bf, posterior = _weighed(small, monkeypatch, faults, 6, 0)
    assert (net.classes, gpu.units, gpu.log_bf) == (168, 128, ())

    first_round = posterior(net.log_bf, net.rest, 1, ())
    refined = posterior(*net.rounds[0], 1, {0})
    assert net.log_bf[1] == pytest.approx(4.80, abs=0.01) and first_round < 0.005
    assert net.rounds[0][0][1] == pytest.approx(20.80, abs=0.01)
    named = [s for s in result.suspects if not s.alternative]
    assert named[0].probability == pytest.approx(posterior(net.log_bf, net.rest, 0, ()),
                                                 rel=1e-12)
    assert named[1].covers(FLAP.split(" -- ")[0]) and named[1].given == (named[0].path,)
    assert named[1].probability == pytest.approx(refined, rel=1e-9)
    assert refined > first_round
    assert refined == pytest.approx(0.982, abs=1e-3)
    text = out.render(result)
    assert "  2. nic port Small.racks[0].hosts[1].nics[1].port[a|b]   probability 98 %, given " \
           "that suspect 1 is real\n" in text
    assert f"suspects ({out.HEADING_GIVEN})" in text
    p = _synth(tmp_path, "--fault", "nic_port", "--fault", "link_flap", "--iterations", "6")
    assert p.returncode == 0, p.stderr
    p = astral("diagnose", SMALL, "--observed", tmp_path / "drill.csv", "--format", "json",
               cwd=REPO)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads((REPO / "schema" /
                                         "diagnosis.schema.json").read_text()))
    assert [(s["path"], s["probability"], s.get("given")) for s in doc["suspects"][:2]] == [
        (named[0].path, 1.0, [named[1].path]), (named[1].path, round(refined, 4),
                                                [named[0].path])]
    assert all("given" not in s for s in doc["suspects"][2:])
    from astral_dsl.outputs.report.diagnosis import diagnosis_section

    page = diagnosis_section(doc)        # the review page says it as the text does
    assert "given that suspect 1 is real" in page and "given that suspect 2 is real" in page
    assert "each named suspect&#x27;s probability is given that the other named" in page


def test_each_named_suspect_is_given_every_other():
    """verdict.given_the_others, by hand. Three network classes A, B, C (prior odds 1/9 each:
    the family's 1/3 over 3), two compute units G, H (1/6 each), one forecast hypothesis (1/3).
    Round 0: A and B ln 216 (odds 24 each: two equally clear faults), C ln 9 (1), G ln 60
    (10), H ln 2 (1/3), the forecast ln 1 (1/3). in_turn names A (24 / (1 + 24 + 24 + 1 + 10
    + 2/3) = 36/91: half of the two faults' share), then B in round 1, A explained (B ln 576:
    odds 64, 96/115), then G in round 2, A and B explained (10 / (1 + 1 + 10 + 2/3) =
    15/19). Given every other named suspect: A in a round with B explained (A ln 576: 64) and
    G taken as real: 64 / (1 + 64 + 1 + 1/3 + 1/3) = 24/25; B in round 1 with G taken as real:
    24/25 likewise; G, whose others are all before it: 15/19, in_turn's."""
    from astral_dsl.diagnose import verdict

    ln = np.log
    rounds = [([ln(216), ln(216)], np.array([ln(9)])), ([0.0, ln(576)], np.array([ln(9)])),
              ([0.0, 0.0], np.array([ln(9)]))]
    gpu = ([ln(60)], np.array([ln(2)]))
    fc = ([], np.array([0.0]))
    picks = verdict.in_turn([(rounds, 3, 2, True), ([gpu], 2, 1, False), ([fc], 1, 0, False)],
                            lambda f, i: (f, i))
    assert [(f, i) for f, i, _ in picks] == [(0, 0), (0, 1), (1, 0)]
    assert [p for _, _, p in picks] == pytest.approx([36 / 91, 96 / 115, 15 / 19], rel=1e-12)
    loo_a = ([ln(576), 0.0], np.array([ln(9)]))
    given = verdict.given_the_others([(rounds[2], [loo_a, rounds[1]], 3), (gpu, [gpu], 2),
                                      (fc, [], 1)], picks)
    assert [(f, i) for f, i, _ in given] == [(0, 0), (0, 1), (1, 0)]
    assert [p for _, _, p in given] == pytest.approx([24 / 25, 24 / 25, 15 / 19], rel=1e-12)


def test_two_clear_faults_both_read_near_certain(small, monkeypatch):
    """`--fault nic_port --fault nic_port --seed 1`: two NIC ports at half rate, each as clear
    as the other. Weighed as the one fault of the first round, the first named had shown its
    share of the two, 50 % (ln BF equal to within 1e-3), beside "100 %, given that suspect 1
    is real" for the second. Each is now weighed in a round of its own, the other explained:
    the first's is the formula on its leave-out round's factors (Found.others[0], the second's
    instances set aside), the second's that of the round that named it (Found.others[1] is
    that round's); both above 0.9, each given the other, and the alternatives, the job's
    probability and `unnamed` as they were (the first round's)."""
    from astral_dsl.diagnose import localise, verdict
    from astral_dsl.outputs import diagnosis as out

    _, fc, rm = small
    rng = np.random.default_rng(1)
    faults = [random_fault("nic_port", rm, fc, rng, 1, 3) for _ in range(2)]
    assert [f.part for f in faults] == ["Small.racks[3].hosts[0].nics[0].port[b]",
                                        "Small.racks[3].hosts[1].nics[1].port[b]"]
    result, net, gpu, fc_bf, posterior = _weighed(small, monkeypatch, faults, 3, 1)
    named = [s for s in result.suspects if not s.alternative]
    assert len(named) == 2 and len(net.others) == 2 and net.others[1] is net.rounds[0]
    assert all(any(s.covers(f.part) for s in named) for f in faults)
    n_net, n_gpu = net.classes, gpu.units

    first_round = posterior(net.log_bf, net.rest, 0, ())
    assert first_round == pytest.approx(0.5, abs=1e-3)
    assert named[0].probability == pytest.approx(posterior(*net.others[0], 0, {1}), rel=1e-9)
    assert named[1].probability == pytest.approx(posterior(*net.rounds[0], 1, {0}), rel=1e-9)
    assert min(s.probability for s in named) > 0.9
    assert (named[0].given, named[1].given) == ((named[1].path,), (named[0].path,))
    limit = np.log(localise.ALARM_ODDS) + np.log(2) - np.log(verdict.PRIOR_ODDS)
    p_job, post, rest = verdict.weigh([(list(net.log_bf), net.rest, n_net),
                                       (list(gpu.log_bf), gpu.rest, n_gpu),
                                       (list(fc_bf[fc_bf >= limit]), fc_bf[fc_bf < limit], 2)])
    assert result.probability == p_job and list(result.unnamed.values()) == rest
    alts = [s for s in result.suspects if s.alternative]
    assert alts and all(not s.given for s in alts)
    assert sorted(s.probability for s in alts) == sorted(post[0][2:])
    text = out.render(result)
    assert f"  1. nic port {named[0].path}   probability 100 %, given that suspect 2 is " \
           f"real\n" in text
    assert f"  2. nic port {named[1].path}   probability 100 %, given that suspect 1 is " \
           f"real\n" in text
