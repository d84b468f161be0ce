"""A generator of large, valid .astral designs for the size benchmarks (benchmarks/bench_scale.py).

A design of about `--kb` kilobytes: one site of as many distinct pods as that takes, each pod
its own templates (host, rack, row with two feeders, pod with a liquid loop, an air room and
the fabric of three tiers, attached to each pod as its tiers serve one), and the site's switch
room and network feeders, written in the style of examples/single_pod.astral,
whose figures the blocks reuse with small variations (hosts per rack, racks per row, rows per pod,
loop temperature), and with its comments, so that the text is what a person writes. Every block
differs, so nothing is shared between pods: the work grows with the text.

    python benchmarks/gen_design.py --kb 1000 -o /tmp/big.astral
"""
from __future__ import annotations

import argparse
import sys

HEADER = """\
// A generated design for the size benchmarks (benchmarks/gen_design.py): {pods} pods, each of
// its own templates in the style of examples/single_pod.astral.
import stdlib.hardware {{ H100_SXM, CX7_2x200G, Switch25T, HGX8 }}
import stdlib.network {{ SR2_200G, SR4_400G }}
import stdlib.cooling {{ Water, CDU }}
import stdlib.power {{ HVDC336, AC415 }}

param switch_power = 600 W
param module_power = 10 W
param cable_temperature = 90 degC
"""

BLOCK = """
// ---- pod {i}: {hosts} hosts a rack, {racks} racks a row, {rows} rows ------------------------
host Node{i} = HGX8(gpu = H100_SXM, nic = CX7_2x200G) {{
  liquid_share = {share} %          // [assumed] cold plates on GPUs and CPUs
}}

rack Rack{i} {{
  hosts = {hosts} x Node{i}
  check power <= 45 kW else error "rack {i} exceeds its busway rating"
}}

row Row{i} {{
  racks = {racks} x Rack{i}
  feeder hvdc {{
    current = dc, voltage = 336 V, standard = HVDC336, side = A
    capacity = 400 kW, serves = racks
    efficiency = 96 %               // [assumed] HVDC rectifiers
    conductors = 2, conductor_area = 300 mm^2, material = copper, length = 25 m, ampacity = 700 A
    conductor_temperature = cable_temperature
  }}
  feeder utility {{
    current = ac, voltage = 415 V, phases = 3, power_factor = 95 %
    standard = AC415, side = B, capacity = 400 kW, serves = racks
    efficiency = 97 %               // [assumed] utility-direct path
    conductor_area = 300 mm^2, material = copper, length = 25 m, reactance = 0.08 ohm/km
    ampacity = 600 A, conductor_temperature = cable_temperature
  }}
}}

pod Pod{i} {{
  rows = {rows} x Row{i}
  fabric = SameRail                 // its tiers serve this pod (no tier joins the pods)
  loop secondary {{
    fluid = Water, supply = {supply} degC, rise = 10 K
    cdu = CDU(rated = 1.2 MW), cdus = {cdus}, redundancy = n_plus_1, serves = rows
    pump_head = 200 kPa, pump_efficiency = 70 %    // [assumed] typical secondary-loop figures
  }}
  air room {{ supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, serves = rows }}   // [assumed]
  check gpus == {gpus} else error "pod {i} holds {gpus} GPUs"
}}
"""

FABRIC = """
fabric SameRail {
  rails = 8, planes = 2, dual_homing = true, max_oversubscription = 1
  tier tor {
    switch = Switch25T(power = switch_power), scope = pod, per = [rail, plane]
    down = 64 x 200 Gb/s, up = 32 x 400 Gb/s
    medium = SR2_200G(ports = 2, power = module_power, lower_form_factor = qsfp112)
    length = 30 m                   // [assumed] hosts a few racks from their ToR
  }
  tier agg {
    switch = Switch25T(power = switch_power), scope = pod, per = [rail, plane]
    down = 32 x 400 Gb/s, up = 32 x 400 Gb/s
    medium = SR4_400G(power = module_power), length = 60 m    // [assumed]
  }
  tier core {
    switch = Switch25T(power = switch_power), scope = pod, down = 64 x 400 Gb/s
    medium = SR4_400G(power = module_power), length = 80 m    // [assumed]
  }
}
"""

SITE = """
site Generated {{
{members}
  utilization = 75 %                // [assumed]
  air netroom {{ supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, network = true }}
  feeder net_hvdc {{
    current = dc, voltage = 336 V, standard = HVDC336, side = A, network = true
    count = {feeders}, capacity = 450 kW, efficiency = 96 %   // [assumed] as the rows' HVDC
    conductors = 3, conductor_area = 300 mm^2, material = copper, length = 25 m, ampacity = 700 A
    conductor_temperature = cable_temperature
  }}
  feeder net_utility {{
    current = ac, voltage = 415 V, phases = 3, power_factor = 95 %
    standard = AC415, side = B, count = {feeders}, capacity = 450 kW, network = true
    efficiency = 97 %               // [assumed] utility-direct path
    conductors = 2, conductor_area = 300 mm^2, material = copper, length = 25 m
    reactance = 0.08 ohm/km, ampacity = 600 A, conductor_temperature = cable_temperature
  }}
  facility water {{
    water_class = W17, supply = 15 degC   // cold enough for the rooms' coils (10 K approach)
    free_cooling = 4000 h           // [assumed] dry coolers alone
    chiller_cop = 6                 // [assumed] trim chillers
    rejection_fan_ratio = 2 %       // [assumed] the dry coolers' fans
  }}
}}
"""


def _shape(i: int):
    """(hosts a rack, racks a row, rows) of pod `i`."""
    return (2, 3, 4)[i % 3], (4, 6, 8)[i // 3 % 3], (2, 4)[i // 9 % 2]


def block(i: int) -> str:
    hosts, racks, rows = _shape(i)
    # one CDU of 1.2 MW per 1.1 MW of heat at the most, and one spare (n + 1)
    heat_kw = hosts * racks * rows * 10.2
    cdus = int(heat_kw // 1100) + 2
    return BLOCK.format(i=i, hosts=hosts, racks=racks, rows=rows, share=70 + i % 10,
                        supply=30 + i % 6, cdus=cdus, gpus=hosts * racks * rows * 8)


def design(kb: float) -> str:
    """The text of a design of about `kb` kilobytes (at least one pod)."""
    target = int(kb * 1000)
    blocks = []
    size = len(HEADER) + len(SITE)
    while not blocks or size < target:
        text = block(len(blocks))
        blocks.append(text)
        size += len(text) + len(f"  pod_{len(blocks)} = 1 x Pod{len(blocks)}\n")
    members = "\n".join(f"  pod_{i} = 1 x Pod{i}" for i in range(len(blocks)))
    # the network feeders: one of 450 kW for every 400 kW of switches (600 W each and their
    # optics): each pod's fabric has 40 or 80 switches, 47-100 kW (57 kW a pod on average over
    # the 18 shapes), counted as 75 kW
    feeders = -(-len(blocks) * 75 // 400) + 1
    return (HEADER.format(pods=len(blocks)) + "".join(blocks) + FABRIC
            + SITE.format(members=members, feeders=feeders))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kb", type=float, default=100, help="size in kilobytes (1 kB = 1,000 bytes)")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    args = p.parse_args(argv)
    text = design(args.kb)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
