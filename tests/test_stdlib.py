"""The standard library catalog (stdlib/*.astral): it compiles cleanly, imports work from a design,
every declaration cites a source, and a sample of values matches the data sheets and papers."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.model.rollup import power_of
from astral_dsl.runs.system_spec import SYSTEMS
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse
from astral_dsl.syntax.source import decode

STDLIB = Path(__file__).resolve().parent.parent / "stdlib"
FILES = ["hardware", "models", "cooling", "power", "network"]

# Names other code depends on (examples, golden tests): they must stay.
REQUIRED = {
    "hardware": ["A100_80GB", "H100_SXM", "H100", "H800", "H200", "B200", "CX7_2x200G", "CX6_HDR",
                 "CX7_400G", "Switch25T", "Switch51T", "QM8700_HDR", "QM9700_NDR", "HGX8",
                 "DGX_A100", "DGX_H100", "DGX_B200"],
    "models": ["GPT3_175B", "Megatron_1T", "Llama3_8B", "Llama3_70B", "Llama3_405B",
               "Mixtral_8x7B", "DeepSeek_V3", "GPT_22B", "GPT_530B", "Llama2_7B", "Llama2_13B",
               "Llama2_70B"],
    "cooling": ["Water", "PG25", "CDU", "CoolIT_CHx750"],
    "power": ["HVDC240", "HVDC336", "HVDC380", "HVDC800", "AC400", "AC415", "AC480",
              "Rectifier", "LeadAcid"],
    "network": ["DAC_400G_CR4", "DAC_200G_CR2", "DAC_200G_CR4", "SR4_400G", "SR2_200G",
                "DR4_400G", "FR4_400G"],
}


def _tree(name: str) -> ast.Module:
    path = STDLIB / f"{name}.astral"
    return parse(decode(str(path), path.read_bytes()))


def _decls(name: str):
    return [item for item in _tree(name).items if isinstance(item, ast.Decl)]


def _design(text: str):
    """A design on stdlib parts with no diagnostic but the W216s of the stdlib's stated
    assumptions it uses (tests/test_assumed.py)."""
    design = astral_dsl.loads(text, name="stdlib_probe.astral")
    assert _unassumed(design.diagnostics) == [], [d.message for d in design.diagnostics]
    return design


def _unassumed(diagnostics):
    """The diagnostics but the W216s of values the stdlib states as assumptions."""
    return [d for d in diagnostics if d.code != "W216"]


def _probe(module: str, *names: str):
    """Compile a design that imports `names` from `module` and attaches each to one site, so that
    `design.instance("S.x_<name>")` is that template's default instance."""
    members = ", ".join(f"x_{n} = {n}" for n in names)
    return _design(f"import stdlib.{module} {{ {', '.join(names)} }}\nsite S {{ {members} }}\n")


def _get(design, name: str, field: str, unit: str | None = None):
    inst = design.instance(f"S.x_{name}")
    assert inst is not None, name
    value = inst.field(field)
    assert value is not None, f"{name}.{field} is not set"
    return value.value_in(unit) if unit is not None else value.si


# ---- every file compiles on its own, with no diagnostic at all ----------------------------------------
# the stated assumptions a file's own check accepts with an `allow` (a design that uses the part
# is warned: the standard library's allows do not reach it)
ACCEPTED = {"hardware": [("W212", "nic `BlueField3` states no `power`: assumed 75 W for "
                                  "host `GB200_Tray`"),
                         ("W212", "nic `CX7_400G_Mezz` states no `power`: assumed 25 W for "
                                  "host `GB200_Tray`"),
                         ("W212", "switch `NVL72_Rest` states no `power`: assumed 8.1 kW for "
                                  "rack `NVL72`"),
                         ("W212", "nic `CX8_800G` states no `power`: assumed 25 W for host "
                                  "`GB300_Tray`"),
                         ("W212", "switch `NVL72_Rest` states no `power`: assumed 8.1 kW for "
                                  "rack `GB300_NVL72`")]}


@pytest.mark.parametrize("name", FILES)
def test_file_compiles_without_diagnostics(name):
    checked = astral_dsl.check(STDLIB / f"{name}.astral")
    assert checked.diagnostics == (), [(d.code, d.message, d.span) for d in checked.diagnostics]
    assert [(a.diagnostic.code, a.diagnostic.message) for a in checked.accepted
            if a.diagnostic.code != "W216"] == ACCEPTED.get(name, [])
    # the file's own `allow W216` accepts each value it states as assumed, at the value: every
    # assumed field of its templates, and the assumed defaults of those that need no argument
    fields = {n.value.span.start for n in ast.walk(_tree(name))
              if isinstance(n, ast.Field) and n.assumed is not None}
    defaults = {n.default.span.start for n in ast.walk(_tree(name))
                if isinstance(n, ast.ParamDef) and n.assumed is not None}
    said = [a.diagnostic.span.start for a in checked.accepted if a.diagnostic.code == "W216"]
    assert len(said) == len(set(said)) and fields <= set(said) <= fields | defaults


@pytest.mark.parametrize("name", FILES)
def test_required_names_are_declared(name):
    declared = {d.name.name for d in _decls(name)}
    missing = [n for n in REQUIRED[name] if n not in declared]
    assert not missing, missing


def test_declaration_names_are_unique_across_the_stdlib():
    seen = {}
    for name in FILES:
        for decl in _decls(name):
            assert decl.name.name not in seen, (decl.name.name, seen.get(decl.name.name), name)
            seen[decl.name.name] = name


# ---- every declaration cites its source ---------------------------------------------------------------
_CITATION = re.compile(r"\b(19|20)\d\d\b|[a-z-]+\.md\b|data sheet")


@pytest.mark.parametrize("name", FILES)
def test_every_declaration_has_a_source(name):
    """Rule: each top-level declaration has a `source = "..."` field in its own body, naming a
    dated document (a year), a vendor data sheet, or a document by its file name (`*.md`)."""
    for decl in _decls(name):
        fields = {s.name.name: s for s in (decl.body or ()) if isinstance(s, ast.Field)}
        assert "source" in fields, f"{name}: `{decl.name.name}` has no `source` field"
        value = fields["source"].value
        assert isinstance(value, ast.String) and value.value.strip(), decl.name.name
        assert _CITATION.search(value.value), \
            f"{name}: the source of `{decl.name.name}` names no year, data sheet or reference note"


@pytest.mark.parametrize("name", FILES)
def test_layout(name):
    """One declaration per block, 2-space indentation inside braces, no tabs or trailing blanks."""
    text = (STDLIB / f"{name}.astral").read_text(encoding="utf-8")
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        assert "\t" not in line and line == line.rstrip(), f"{name}.astral:{number}"
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if stripped.startswith("}"):
            depth -= 1
        indent = len(line) - len(line.lstrip(" "))
        assert indent == 2 * depth, f"{name}.astral:{number}: indentation {indent}"
        code = stripped.split("//")[0]
        depth += code.count("{") - code.count("}") + (1 if stripped.startswith("}") else 0)
    assert depth == 0


# ---- imports work from a design --------------------------------------------------------------------------
def test_import_into_a_design():
    design = _design("import stdlib.hardware { H800, HGX8, CX7_2x200G }\n"
                     "site S { hosts = 4 x HGX8(gpu = H800, nic = CX7_2x200G) }\n")
    summary = astral_dsl.summary(design)
    assert summary["gpus"] == 32 and summary["hosts"] == 4
    assert summary["it_power_kw"] == pytest.approx(40.8)          # 4 x 10.2 kW
    host = design.instance("S.hosts[0]")
    assert host.field("nvlink_bandwidth").value_in("GB/s") == pytest.approx(200)  # from H800
    assert host.field("units").value_in("U") == pytest.approx(8)
    assert host.field("liquid_share").si == pytest.approx(0.75)


def test_whole_module_import_and_a_full_design():
    design = _design("""
import stdlib.hardware as hw
import stdlib.power { HVDC240, AC400, Rectifier, LeadAcid }
import stdlib.cooling { PG25, CDU }
import stdlib.models { Llama3_405B }
rack R { hosts = 4 x hw.HGX8(gpu = hw.H800, nic = hw.CX7_2x200G, power = 10 kW) }
site S {
  racks = 2 x R
  power P {
    feeder hvdc { current = dc, voltage = 240 V, standard = HVDC240, rectifier = Rectifier, battery = LeadAcid }
    feeder utility { current = ac, voltage = 400 V, standard = AC400, phases = 3 }
  }
  cooling C {
    loop secondary { fluid = PG25, supply = 40 degC, rise = 10 K, cdu = CDU(capacity = 2 MW), cdus = 2 }
  }
}
job J { model = Llama3_405B, parallel { tp = 8, pp = 16, dp = 1 } }
""")
    summary = astral_dsl.summary(design)
    assert summary["gpus"] == 64 and summary["it_power_kw"] == pytest.approx(80)


# ---- hardware: spot checks against the data sheets --------------------------------------------------------
@pytest.fixture(scope="module")
def gpus():
    return _probe("hardware", "A100_80GB", "H100_SXM", "H800", "H200", "B200")


def test_gpu_systems_and_coolant_limits(gpus):
    # the vendor's 8-GPU server on each GPU (DGX data sheets): peak power and height
    for name, kw, units in (("A100_80GB", 6.5, 6), ("H100_SXM", 10.2, 8), ("H800", 10.2, 8),
                            ("H200", 10.2, 8), ("B200", 14.3, 10)):
        assert _get(gpus, name, "system_power", "kW") == pytest.approx(kw), name
        assert _get(gpus, name, "system_units", "U") == pytest.approx(units), name
        # the warm-water inlet limit of liquid-cooled SXM servers (Lenovo SD665-N V3, Supermicro
        # DLC-2 product literature): 45 degC
        assert _get(gpus, name, "max_supply", "degC") == pytest.approx(45), name


def test_nic_power_is_the_pcie_cem_bound():
    nics = _probe("hardware", "CX7_2x200G", "CX7_400G", "CX6_HDR")
    for name in ("CX7_2x200G", "CX7_400G", "CX6_HDR"):
        # PCI Express CEM: 25 W for a low-profile x16 add-in card
        assert _get(nics, name, "power", "W") == pytest.approx(25), name


def test_the_mezzanine_nic_states_no_power_and_the_assumed_25_w_warns_where_counted():
    # CX8_800G (the GB300 tray's mezzanine SuperNICs: no CEM slot, no data-sheet power) states
    # none: a host that adds up its parts counts it as 0 W, with W690 (8 GPUs x 1 kW = 8 kW)
    checked = astral_dsl.check(astral_dsl.compiles(
        "import stdlib.hardware { CX8_800G }\ngpu G { power = 1000 W }\n"
        "host H { gpus = 8 x G, nics = 8 x CX8_800G }\nsite S { h = 2 x H }\n",
        name="cx8.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W690"]
    assert w.message.startswith("nic `CX8_800G` declares no `power`: its 16 replica(s)")
    assert checked.engineering.power.it_peak_w == pytest.approx(16_000)
    # the GB300 tray counts 4 x [assumed] 25 W: 4 x 1,400 + 2 x 300 + 4 x 25 = 6,300 W, with
    # W212 saying so (the tray's figure is unchanged)
    watts, (w,) = _tray("import stdlib.hardware { GB300_Tray }\nsite S { t = 1 x GB300_Tray }\n")
    assert watts == pytest.approx(6300)
    assert w.message == "nic `CX8_800G` states no `power`: assumed 25 W for host `GB300_Tray`"
    assert "no data sheet gives their power" in w.notes[0] and w.span is not None and w.hint


def _tray(text):
    """(the one host's power in W, the W212s) of a design compiled from `text`."""
    ws = astral_dsl.compiles(text, name="tray.astral")
    (tray,) = [i for i in ws.design.instances if i.kind == "host"]
    return tray.field("power").value_in("W"), [d for d in ws.design.diagnostics if d.code == "W212"]


def test_the_gb200_tray_counts_its_assumed_nic_and_dpu_power_with_w212():
    # 2 superchips x 2,700 W (data sheet) + 4 x [assumed] 25 W ConnectX-7 on mezzanine boards
    # + 2 x [assumed] 75 W BlueField-3 = 5,400 + 100 + 150 = 5,650 W, as before, each
    # assumption with its W212
    watts, (dpu, nic) = _tray("import stdlib.hardware { GB200_Tray }\n"
                              "site S { t = 1 x GB200_Tray }\n")
    assert watts == pytest.approx(5650)
    assert nic.message == "nic `CX7_400G_Mezz` states no `power`: assumed 25 W for host " \
                          "`GB200_Tray`"
    assert "no data sheet gives their power" in nic.notes[0] and nic.span is not None and nic.hint
    assert dpu.message == "nic `BlueField3` states no `power`: assumed 75 W for host `GB200_Tray`"
    assert "2 BlueField-3 DPUs" in dpu.notes[0] and dpu.span is not None and dpu.hint
    # a NIC that states its power is counted, silently: 5,400 + 4 x 20 + 150 = 5,630 W (the
    # DPUs' assumption still warns)
    watts, ws = _tray("import stdlib.hardware { GB200_Tray, CX7_400G_Mezz }\n"
                      "nic M = CX7_400G_Mezz { power = 20 W }\n"
                      "site S { t = 1 x GB200_Tray(nic = M) }\n")
    assert watts == pytest.approx(5630) and [w.message for w in ws] == [dpu.message]
    # and DPUs that state theirs, through the rack too: trays of 5,400 + 4 x 20 + 2 x 60 =
    # 5,600 W, silent; the rack 18 x 5,600 + 9 x 800 (switch trays) + 8,100 (the rest of it,
    # stated too) = 116,100 W
    ws = astral_dsl.compiles("import stdlib.hardware { NVL72, CX7_400G_Mezz, BlueField3, "
                             "NVL72_Rest }\n"
                             "nic M = CX7_400G_Mezz { power = 20 W }\n"
                             "nic D = BlueField3 { power = 60 W }\n"
                             "switch R = NVL72_Rest { power = 8.1 kW }\n"
                             "site S { r = 1 x NVL72(nic = M, dpu = D, rest = R) }\n",
                             name="rack.astral")
    (tray,) = [i for i in ws.design.instances if i.kind == "host"]
    assert tray.field("power").value_in("W") == pytest.approx(5600)
    assert astral_dsl.check(ws).engineering.power.it_peak_w == pytest.approx(116_100)
    assert [d for d in ws.design.diagnostics if d.code == "W212"] == []



def _line_of(name: str, needle: str) -> int:
    """The 1-based line of a stdlib file (`stdlib/hardware.astral`) where `needle` is."""
    from astral_dsl import resources

    text = (resources.stdlib_dir() / name.split("/", 1)[1]).read_text(encoding="utf-8")
    return text.count("\n", 0, text.index(needle)) + 1


def test_a_w212_of_an_nvl72_names_the_users_line():
    """NVL72's trays are asked for in NVL72's body: W212 stood there (stdlib/hardware.astral),
    which the user does not edit, with a note naming the user's line; it now stands on the
    user's line (the user's template deriving NVL72, `rack Nvl = NVL72()`, 2:1, or the user's
    call, 2:18), NVL72's line that makes the trays its related span, as rustc's."""
    text = ("import stdlib.hardware { NVL72 }\n"
            "rack Nvl = NVL72() { power_limit = 140 kW }\n"
            "site S { r = 1 x Nvl }\n")
    for source, at in ((text, "nvl.astral:2:1"),
                       ("import stdlib.hardware { NVL72 }\nsite S { r = 1 x NVL72() }\n",
                        "nvl.astral:2:18")):
        ws = astral_dsl.compiles(source, name="nvl.astral")
        found = [d for d in ws.design.diagnostics if d.code == "W212"
                 and "NVL72_Rest" not in d.message]    # the rest's stands at their line itself
        assert len(found) == 2
        for w in found:
            assert str(w.span) == at
            ((tray, said),) = [(r.span, r.message) for r in w.related]
            assert tray.file == "stdlib/hardware.astral" and said == "host `GB200_Tray` is made here"
            assert tray.start.line == _line_of("stdlib/hardware.astral", "x GB200_Tray(nic = nic")
    # a tray the user asks for is warned at their line: no note to add
    _, (dpu, nic) = _tray("import stdlib.hardware { GB200_Tray }\n"
                          "site S { t = 1 x GB200_Tray }\n")
    assert dpu.span.file == "tray.astral" and len(dpu.notes) == len(nic.notes) == 1

def test_a100_80gb(gpus):   # NVIDIA A100 data sheet (2021)
    assert _get(gpus, "A100_80GB", "power", "W") == 400
    assert _get(gpus, "A100_80GB", "memory", "GiB") == 80   # 80 GiB of HBM2e (JEDEC: binary)
    assert _get(gpus, "A100_80GB", "memory_bandwidth", "GB/s") == 2039
    assert _get(gpus, "A100_80GB", "flops_bf16", "TFLOP/s") == 312
    assert _get(gpus, "A100_80GB", "nvlink_bandwidth", "GB/s") == 300   # 600 GB/s total


def test_hopper(gpus):      # H100 / H800 / H200 data sheets
    for name in ("H100_SXM", "H800", "H200"):
        assert _get(gpus, name, "power", "W") == 700
        assert _get(gpus, name, "flops_bf16", "TFLOP/s") == 989
        assert _get(gpus, name, "flops_fp8", "TFLOP/s") == 1979
    assert _get(gpus, "H100_SXM", "memory_bandwidth", "TB/s") == pytest.approx(3.35)
    assert _get(gpus, "H100_SXM", "nvlink_bandwidth", "GB/s") == 450
    assert _get(gpus, "H800", "nvlink_bandwidth", "GB/s") == 200
    assert _get(gpus, "H200", "memory", "GiB") == 141
    assert _get(gpus, "H200", "memory_bandwidth", "TB/s") == pytest.approx(4.8)


def test_b200(gpus):        # DGX/HGX B200 (2024) data sheets
    assert _get(gpus, "B200", "flops_bf16", "TFLOP/s") == 2250
    assert _get(gpus, "B200", "flops_fp8", "PFLOP/s") == pytest.approx(4.5)
    assert _get(gpus, "B200", "memory_bandwidth", "TB/s") == 8
    assert _get(gpus, "B200", "nvlink_bandwidth", "TB/s") == pytest.approx(0.9)
    assert _get(gpus, "B200", "power", "kW") == 1


def test_bandwidth_units_are_bytes_not_bits(gpus):
    # 450 GB/s each direction is 3.6 Tb/s
    assert _get(gpus, "H100_SXM", "nvlink_bandwidth", "Tb/s") == pytest.approx(3.6)


def test_nics_and_switches():
    d = _probe("hardware", "CX7_2x200G", "CX6_HDR", "CX7_400G", "Switch25T", "Switch51T",
               "QM8700_HDR", "QM9700_NDR")
    assert _get(d, "CX7_2x200G", "ports") == 2
    assert _get(d, "CX7_2x200G", "port_speed", "Gb/s") == 200
    assert _get(d, "CX6_HDR", "ports") == 1 and _get(d, "CX6_HDR", "port_speed", "Gb/s") == 200
    assert _get(d, "CX7_400G", "port_speed", "Gb/s") == 400
    assert _get(d, "Switch51T", "capacity", "Tb/s") == pytest.approx(51.2)
    assert _get(d, "Switch51T", "ports") == 128 and _get(d, "Switch51T", "max_ports") == 256
    assert _get(d, "Switch25T", "capacity", "Tb/s") == pytest.approx(25.6)
    assert _get(d, "QM8700_HDR", "ports") == 40
    assert _get(d, "QM9700_NDR", "ports") == 64
    for name in ("Switch25T", "Switch51T", "QM8700_HDR", "QM9700_NDR"):
        # capacity is one direction: ports x port_speed
        assert _get(d, name, "capacity") == pytest.approx(
            _get(d, name, "ports") * _get(d, name, "port_speed")), name


def test_switch_power_and_cages():
    # NVIDIA QM9700 data sheet: 64 NDR ports on 32 OSFP cages, typical power with passive cables
    # (ATIS) 747 W; QM8700: 40 QSFP56, 253 W. The Tomahawk classes have no power (W606 asks the
    # design for its vendor's figure) but their cages: 64 x 800G (TH5), 64 x 400G (TH4).
    d = _probe("hardware", "Switch25T", "Switch51T", "QM8700_HDR", "QM9700_NDR", "CX7_2x200G",
               "CX7_400G", "CX6_HDR")
    assert _get(d, "QM9700_NDR", "power", "W") == 747
    assert _get(d, "QM9700_NDR", "cages") == 32
    assert d.instance("S.x_QM9700_NDR").field("form_factor").name == "osfp"
    assert _get(d, "QM8700_HDR", "power", "W") == 253
    assert _get(d, "QM8700_HDR", "cages") == 40
    assert _get(d, "Switch51T", "cages") == 64 and _get(d, "Switch25T", "cages") == 64
    for name in ("Switch25T", "Switch51T"):
        assert d.instance(f"S.x_{name}").field("power") is None
    forms = {"CX7_2x200G": "qsfp112", "CX7_400G": "osfp", "CX6_HDR": "qsfp56"}
    for name, form in forms.items():
        assert d.instance(f"S.x_{name}").field("form_factor").name == form


def test_link_media_reach():
    # IEEE 802.3ck (CR4/CR2 at 100 Gb/s per lane: 2 m), 802.3cd (200GBASE-CR4: 3 m), 802.3db
    # (SR4/SR2 over OM4: 100 m), 802.3bs (DR4: 500 m), 802.3cu (FR4: 2 km)
    d = _probe("network", *REQUIRED["network"])
    reach = {"DAC_400G_CR4": 2, "DAC_200G_CR2": 2, "DAC_200G_CR4": 3, "SR4_400G": 100,
             "SR2_200G": 100, "DR4_400G": 500, "FR4_400G": 2000}
    for name, metres in reach.items():
        assert _get(d, name, "reach", "m") == metres, name
    for name in REQUIRED["network"]:
        kind = d.instance(f"S.x_{name}").field("type").name
        assert kind == ("dac" if name.startswith("DAC") else "optics"), name
        assert _get(d, name, "speed", "Gb/s") == (400 if "400G" in name else 200), name


def test_dgx_hosts():       # DGX A100 (2020), DGX H100 (2023), DGX B200 (2024) data sheets
    expected = {"DGX_A100": (6.5, 6), "DGX_H100": (10.2, 8), "DGX_B200": (14.3, 10)}
    for name, (kw, units) in expected.items():
        # one design per host: see test_two_host_templates_sharing_a_nic for why
        d = _probe("hardware", name)
        assert _get(d, name, "power", "kW") == pytest.approx(kw), name
        assert _get(d, name, "units", "U") == pytest.approx(units), name
        assert _get(d, name, "liquid_share") == 0, name              # air-cooled systems
        summary = astral_dsl.summary(d)
        assert summary["gpus"] == 8 and summary["hosts"] == 1
        # the DGX SuperPOD golden tests count compute-fabric ports: 8 single-port NICs per DGX
        nics = d.instance(f"S.x_{name}").member("nics")
        assert nics.count == 8
        assert nics.at(0).field("ports").si == 1
        assert d.instance(f"S.x_{name}").member("cpus").count == 2


def test_two_host_templates_sharing_a_nic():
    d = _probe("hardware", "DGX_H100", "DGX_B200")      # both hold 8 x CX7_400G
    assert astral_dsl.summary(d)["gpus"] == 16


# ---- models: spot checks against the papers ----------------------------------------------------------------
@pytest.fixture(scope="module")
def models():
    return _probe("models", *REQUIRED["models"])


def test_llama3_405b(models):   # Llama 3 Herd of Models, Table 3
    got = {f: _get(models, "Llama3_405B", f) for f in
           ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq")}
    assert got == {"layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "ffn": 53248,
                   "vocab": 128256, "seq": 8192}


def test_llama2(models):   # Touvron et al., Llama 2 (2023), Table 1; the models' config.json
    table = {"Llama2_7B": (32, 4096, 32, 32, 11008), "Llama2_13B": (40, 5120, 40, 40, 13824),
             "Llama2_70B": (80, 8192, 64, 8, 28672)}
    for name, shape in table.items():
        assert tuple(_get(models, name, f) for f in
                     ("layers", "hidden", "heads", "kv_heads", "ffn")) == shape, name
        assert (_get(models, name, "vocab"), _get(models, name, "seq")) == (32000, 4096), name
        assert str(models.instance(f"S.x_{name}").field("activation")) == "swiglu", name


def test_mixtral_and_deepseek(models):
    assert [_get(models, "Mixtral_8x7B", f) for f in ("layers", "hidden", "experts", "top_k")] \
        == [32, 4096, 8, 2]
    assert [_get(models, "DeepSeek_V3", f) for f in
            ("layers", "hidden", "experts", "shared_experts", "top_k", "moe_ffn", "dense_layers",
             "vocab")] == [61, 7168, 256, 1, 8, 2048, 3, 129280]


def test_megatron_calibration_models(models):   # Korthikanti et al. 2022, Table 5
    table = {"GPT_22B": (64, 6144, 48), "GPT3_175B": (96, 12288, 96),
             "GPT_530B": (128, 20480, 105), "Megatron_1T": (160, 25600, 128)}
    for name, (heads, hidden, layers) in table.items():
        assert (_get(models, name, "heads"), _get(models, name, "hidden"),
                _get(models, name, "layers")) == (heads, hidden, layers), name
        assert _get(models, name, "vocab") == 51200 and _get(models, name, "seq") == 2048


def test_gpt_params_follow_narayanan_formula(models):
    """P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) (Narayanan et al. 2021): 174.6B, 529.6B, 1008.0B
    in their Table 1."""
    for name, billions in (("GPT_22B", 22.1), ("GPT3_175B", 174.6), ("GPT_530B", 529.6),
                           ("Megatron_1T", 1008.0)):
        l, h = _get(models, name, "layers"), _get(models, name, "hidden")
        v, s = _get(models, name, "vocab"), _get(models, name, "seq")
        formula = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h))
        assert _get(models, name, "params") == pytest.approx(formula, rel=1e-9), name
        assert round(formula / 1e9, 1) == billions, name


def test_swiglu_params_follow_the_architecture(models):
    """Untied embeddings, GQA attention, 3-matrix SwiGLU experts, a router per MoE layer, two norms
    per layer and a final norm; matches 8.03B / 70.6B / 405.9B / 46.7B."""
    for name, billions in (("Llama3_8B", 8.03), ("Llama3_70B", 70.55), ("Llama3_405B", 405.85),
                           ("Mixtral_8x7B", 46.70), ("Llama2_7B", 6.74), ("Llama2_13B", 13.02),
                           ("Llama2_70B", 68.98)):
        g = {f: _get(models, name, f) for f in ("layers", "hidden", "heads", "kv_heads", "ffn",
                                                  "vocab")}
        experts = models.instance(f"S.x_{name}").field("experts")
        e = int(experts.si) if experts is not None else 1
        h, head_dim = g["hidden"], g["hidden"] // g["heads"]
        attention = 2 * h * h + 2 * h * g["kv_heads"] * head_dim
        mlp = 3 * h * g["ffn"] * e + (h * e if e > 1 else 0)
        total = g["layers"] * (attention + mlp + 2 * h) + 2 * g["vocab"] * h + h
        assert _get(models, name, "params") == total, name
        assert round(total / 1e9, 2) == billions, name


# ---- cooling ---------------------------------------------------------------------------------------------
def test_fluids_and_cdu():
    d = _probe("cooling", "Water", "PG25", "CDU", "CoolIT_CHx750")
    assert d.instance("S.x_PG25").field("coolprop") == "INCOMP::MPG[0.25]"
    assert d.instance("S.x_Water").field("coolprop") == "Water"
    assert _get(d, "PG25", "concentration") == pytest.approx(0.25)
    assert _get(d, "CDU", "capacity", "MW") == pytest.approx(1.2)
    # V = Q / (rho cp dT), water near 30 degC (IAPWS-95): 1.44 L/min per kW at 10 K
    assert _get(d, "CDU", "max_flow", "L/min") == pytest.approx(1.44 * 1200, rel=5e-3)
    assert _get(d, "CoolIT_CHx750", "capacity", "kW") == 750


def test_cdu_flow_scales_with_rating_and_rise():
    d = _design("import stdlib.cooling { CDU }\nsite S { c = CDU(capacity = 120 kW, rise = 10 K), "
                "d = CDU(capacity = 1 MW, rise = 5 K) }\n")
    assert d.instance("S.c").field("max_flow").value_in("L/min") == pytest.approx(173, rel=5e-3)
    assert d.instance("S.d").field("max_flow").value_in("L/min") == pytest.approx(2890, rel=5e-3)


# ---- power ------------------------------------------------------------------------------------------------
def test_voltage_standards():
    d = _probe("power", *[n for n in REQUIRED["power"] if n[0] in "HA"])
    ranges = {"HVDC240": (240, 192, 288), "HVDC380": (380, 260, 400), "AC400": (400, 360, 440),
              "AC480": (480, 456, 504)}
    for name, (nominal, low, high) in ranges.items():
        assert (_get(d, name, "nominal", "V"), _get(d, name, "min", "V"),
                _get(d, name, "max", "V")) == pytest.approx((nominal, low, high)), name
    assert _get(d, "HVDC800", "nominal", "V") == 800
    assert str(d.instance("S.x_HVDC240").field("current")) == "dc"
    assert str(d.instance("S.x_AC415").field("current")) == "ac"


def test_rectifier_redundancy_engineering_example():
    """Hand-computed: 132 kW on 5.5 kW modules -> 24 + 1 = 25 (Uptime Institute N+1)."""
    d = _probe("power", "Rectifier")
    module = _get(d, "Rectifier", "module", "kW")
    assert module == pytest.approx(5.5)
    assert str(d.instance("S.x_Rectifier").field("redundancy")) == "n_plus_1"
    assert math.ceil(132 / module - 1e-9) + 1 == 25
    assert _get(d, "Rectifier", "efficiency") == pytest.approx(0.96)


def test_battery_ieee485_engineering_example():
    """Hand-computed (IEEE 485): 240 V HVDC bus, 120 lead-acid cells (210 V end), 1 MW for 15 min ->
    I = 4,762 A, 1,190 Ah raw, 1,637 Ah with the aging and design factors."""
    d = _probe("power", "LeadAcid")
    b = lambda f: _get(d, "LeadAcid", f)  # noqa: E731
    v_end = b("cells") * b("end_voltage")
    assert v_end == pytest.approx(210)
    current = 1e6 / (b("efficiency") * v_end)
    hours = b("autonomy") / 3600
    raw = current * hours
    sized = raw * b("temperature_factor") * b("aging_factor") * b("design_factor")
    assert (round(current), round(raw), round(sized)) == (4762, 1190, 1637)


def test_template_parameters_override():
    d = _design("import stdlib.power { LeadAcid, Rectifier }\n"
                "site S { b = LeadAcid(autonomy = 10 min, cells = 240), "
                "r = Rectifier(module = 15 kW, redundancy = \"two_n\") }\n")
    assert d.instance("S.b").field("autonomy").value_in("min") == 10
    assert d.instance("S.b").field("cells").si == 240
    assert d.instance("S.r").field("module").value_in("kW") == 15
    assert str(d.instance("S.r").field("redundancy")) == "two_n"


# ---- parameters named as the fields they set; the old names still work, with W211 ---------------
@pytest.mark.parametrize("module, call, field, value", [
    ("power", "Rectifier(rating = 15 kW)", "module", ("kW", 15)),
    ("power", "Rectifier(eff = 97 %)", "efficiency", (None, 0.97)),
    ("power", "LeadAcid(time = 10 min)", "autonomy", ("min", 10)),
    ("power", "LeadAcid(n_cells = 240)", "cells", (None, 240)),
    ("power", "LeadAcid(eff = 95 %)", "efficiency", (None, 0.95)),
    ("cooling", "CDU(rated = 2 MW)", "capacity", ("MW", 2)),
])
def test_old_parameter_names_are_accepted_with_w211(module, call, field, value):
    name = call.split("(")[0]
    old = call.split("(")[1].split(" =")[0]
    text = f"import stdlib.{module} {{ {name} }}\nsite S {{ x = {call} }}\n"
    design = astral_dsl.loads(text, name="old.astral")
    (w,) = _unassumed(design.diagnostics)
    assert (w.code, w.severity.value) == ("W211", "warning")
    assert w.message == f"`{old}` is the old name of `{name}`'s parameter `{field}`"
    assert (w.span.start.line, w.span.start.column) == (2, 15 + len(name))
    unit, expected = value
    got = design.instance("S.x").field(field)
    assert (got.value_in(unit) if unit else got.si) == pytest.approx(expected)
    # the new name means the same, without a word
    new = _design(text.replace(f"{old} =", f"{field} ="))
    assert new.instance("S.x").field(field) == got


def test_hgx8_parameters_are_the_host_fields():
    d = _design("import stdlib.hardware { HGX8, H100_SXM, CX7_400G }\n"
                "site S { x = HGX8(gpu = H100_SXM, nic = CX7_400G, power = 11 kW, units = 9 U, "
                "liquid_share = 0 %) }\n")
    host = d.instance("S.x")
    assert host.field("power").value_in("kW") == 11 and host.field("units").value_in("U") == 9
    assert host.field("liquid_share").si == 0
    old = astral_dsl.loads("import stdlib.hardware { HGX8, H100_SXM, CX7_400G }\n"
                           "site S { x = HGX8(gpu = H100_SXM, nic = CX7_400G, peak = 11 kW, "
                           "height = 9 U, liquid = 0 %) }\n", name="old.astral")
    assert [d.code for d in _unassumed(old.diagnostics)] == ["W211"] * 3
    assert old.instance("S.x").field("power") == host.field("power")


def test_h100_is_the_sxm_part():
    d = _probe("hardware", "H100", "H100_SXM")
    for field in ("power", "memory", "memory_bandwidth", "flops_bf16", "flops_fp8",
                  "nvlink_bandwidth", "system_power", "system_units", "sms"):
        assert _get(d, "H100", field) == _get(d, "H100_SXM", field), field
    design = astral_dsl.loads("import stdlib.hardware { H100, CX7_400G, HGX8 }\n"
                              "host Node = HGX8(gpu = H100, nic = CX7_400G)\n"
                              "site S { h = 2 x Node }\n", name="h100.astral")
    assert design.valid and not _unassumed(design.diagnostics), design.diagnostics


def _rack(text):
    """(the one rack's power in kW, the W212s of the rest of it, the rest's instance)."""
    ws = astral_dsl.compiles(text, name="nvl.astral")
    assert not [d for d in ws.design.diagnostics if d.is_error], ws.design.diagnostics
    (rack,) = [i for i in ws.design.instances if i.kind == "rack"]
    (rest,) = [i for i in ws.design.instances if i.template == "NVL72_RestCounted"]
    return (power_of(rack, {}).si / 1e3,
            [d for d in ws.design.diagnostics if d.code == "W212" and "rest" in d.notes[0]], rest)


def test_an_nvl72_counts_the_rest_of_the_rack_as_assumed_with_w212_where_it_is_used():
    """NVL72 counted its trays alone (108.9 kW), its management switches, fans and the trays'
    other parts as 0 W, and no output said so, against the ~120 kW reported for the rack. It now
    counts [assumed] 8.1 kW for them (120 kW less the shelves' 2.5 %, less the trays), all on
    the air, with W212 at the user's line that brings the rack in, naming the assumption."""
    for source, at in (("import stdlib.hardware { NVL72 }\n"
                        "rack Nvl = NVL72() { power_limit = 140 kW }\nsite S { r = 2 x Nvl }\n",
                        (2, 1)),
                       ("import stdlib.hardware { NVL72 }\nsite S { r = 1 x NVL72 }\n", (2, 18))):
        kw, (w,), rest = _rack(source)
        assert kw == pytest.approx(18 * 5.65 + 9 * 0.8 + 8.1) == pytest.approx(117)
        assert w.message.startswith("switch `NVL72_Rest` states no `power`: assumed 8.1 kW for "
                                    "rack `N")
        assert (w.span.file, w.span.start.line, w.span.start.column) == ("nvl.astral", *at)
        assert "management switches, its fans" in w.notes[0] and "GTC 2024" in w.notes[0]
        assert rest.field("liquid_share").si == 0
    # GB300 NVL72 likewise: 120.6 kW of trays and 8.1 kW
    kw, (w,), _ = _rack("import stdlib.hardware { GB300_NVL72 }\nsite S { r = 1 x GB300_NVL72 }\n")
    assert kw == pytest.approx(128.7) and w.message.endswith("for rack `GB300_NVL72`")


def test_a_w212_of_a_rack_a_stdlib_block_names_bare_names_the_users_line():
    """stdlib.systems' DGX_GB200_SU names NVL72 bare (`8 x NVL72`): a template named bare was
    instantiated in its own module, so no W212 it brought (the racks' rest, the trays' NICs and
    DPUs) said which line of the user's file brings it in; each stands there now (it stood in
    the stdlib with a note naming it), the stdlib's line its related span."""
    ws = astral_dsl.compiles("import stdlib.systems { DGX_GB200_SU }\n"
                             "site S { sus = 1 x DGX_GB200_SU }\n", name="su.astral")
    found = [d for d in ws.design.diagnostics if d.code == "W212"]
    assert len(found) == 3
    for w in found:
        assert str(w.span) == "su.astral:2:20", (w.message, w.span)
        assert [r.span.file for r in w.related] == [
            "stdlib/systems.astral" if "NVL72_Rest" in w.message else "stdlib/hardware.astral"]


def test_a_w212_names_every_place_that_brings_the_instance_in_as_w216_does():
    """One NVL72 (made once: the same arguments) brought in by two lines of the user's file:
    W216 stood at both, W212 at the first alone (Frame.used_at), so the second line's racks
    seemed to take no assumed figure. Both now read the places the instantiator noted
    (semantics/brought_in.py): each W212 stands at the first line, the second its related span
    ("also brought in here", after the stdlib's line that makes the trays), as each W216 does
    (one warning a finding, not one a place: tests/test_many_places.py)."""
    ws = astral_dsl.compiles("import stdlib.hardware { NVL72 }\n"
                             "site S {\n  a = 1 x NVL72\n  b = 2 x NVL72\n}\n", name="two.astral")
    found = [d for d in ws.design.diagnostics if d.code == "W212"]
    assert len(found) == 3 and len({w.message for w in found}) == 3

    def places(d):
        return [(d.span.start.line, d.span.start.column)] + [
            (r.span.start.line, r.span.start.column) for r in d.related
            if r.message == "also brought in here"]

    for w in found:
        assert places(w) == [(3, 11), (4, 11)], w
        assert [r.span.file for r in w.related] == \
            ([] if "NVL72_Rest" in w.message else ["stdlib/hardware.astral"]) + ["two.astral"]
    assumed = [places(d) for d in ws.design.diagnostics if d.code == "W216"]
    assert assumed and all(at == [(3, 11), (4, 11)] for at in assumed)


def test_a_design_that_states_the_rest_of_an_nvl72_sees_its_figure_and_no_warning():
    head = "import stdlib.hardware { NVL72, GB300_NVL72, NVL72_Rest }\n"
    kw, found, rest = _rack(head + "switch R = NVL72_Rest { power = 6 kW }\n"
                                   "site S { r = 1 x NVL72(rest = R) }\n")
    assert kw == pytest.approx(108.9 + 6) and found == []
    assert rest.field("power").value_in("kW") == 6 and rest.field("liquid_share").si == 0
    kw, found, _ = _rack(head + "switch R = NVL72_Rest { power = 6 kW }\n"
                                "site S { r = 1 x GB300_NVL72(rest = R) }\n")
    assert kw == pytest.approx(120.6 + 6) and found == []
    # a part of the user's own: its power and its liquid share; one that states no liquid share
    # is taken on the air, with W212 saying so
    kw, found, rest = _rack(head + "switch R { power = 5 kW, liquid_share = 20 % }\n"
                                   "site S { r = 1 x NVL72(rest = R) }\n")
    assert kw == pytest.approx(113.9) and found == [] and rest.field("liquid_share").si == 0.2
    kw, (w,), _ = _rack(head + "switch R { power = 5 kW }\nsite S { r = 1 x NVL72(rest = R) }\n")
    assert kw == pytest.approx(113.9)
    assert w.message == "switch `R` states no `liquid_share`: assumed 0 % for rack `NVL72`"


# ---- stdlib.systems: each system `astral runs` places runs on is a design that compiles ----------------
@pytest.mark.parametrize("key", sorted(SYSTEMS))
def test_each_system_compiles_as_one_scalable_unit(key):
    """A site of one SU on its fabric, as `astral runs` and a design starting from it build it: no
    error. The GB200 leaf declared 144 ports down and 144 up on the 64-port QM9700 (E600), the Grand
    Teton fabric InfiniBand switches for its RoCE NICs (E611)."""
    system = SYSTEMS[key]
    ws = astral_dsl.compiles(f"{system.header()}\nsite S {{ sus = 1 x {system.su}, fabric = "
                             f"{system.fabric} }}\n", name="system_probe.astral")
    checked = astral_dsl.check(ws)
    errors = [(d.code, d.message) for d in checked.diagnostics if d.is_error]
    assert checked.valid and not errors, errors
    assert astral_dsl.summary(ws.design)["gpus"] == system.gpus_per_su


def test_grand_teton_host_power():
    # [assumed] a DGX H100's 10.2 kW less 8 GPUs x (700 W - 500 W) of the cap: 10.2 - 1.6 = 8.6 kW
    d = _probe("hardware", "H100_SXM_96GB_500W")
    assert _get(d, "H100_SXM_96GB_500W", "system_power", "kW") == pytest.approx(8.6)
    ws = astral_dsl.compiles("import stdlib.systems { GrandTeton_SU, RoCE_Fabric }\n"
                             "site S { sus = 1 x GrandTeton_SU, fabric = RoCE_Fabric }\n",
                             name="gt.astral")
    host = ws.design.instance("S.sus[0].racks[0].hosts[0]")
    assert host.field("power").value_in("kW") == pytest.approx(8.6)
    # 32 hosts x 8.6 kW = 275.2 kW; the Ethernet switches' power is not known (W606)
    assert astral_dsl.summary(ws.design)["it_power_kw"] == pytest.approx(275.2)
    assert "W606" in {d.code for d in astral_dsl.check(ws).diagnostics}
