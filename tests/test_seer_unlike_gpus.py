"""W773: Seer prices every rank of a job as the first GPU of its placement (seer/cluster.py), so
a job whose GPUs are not alike (two kinds of host, or a scenario that sets a figure of some of
them) says so; before, the forecast priced the first GPU alone and said nothing: slowing a GPU
of the first host slowed the whole job, slowing one of any other host changed nothing."""
from __future__ import annotations

import astral_dsl

HEAD = """
import stdlib.hardware { H100_SXM, B200, CX7_400G, HGX8 }
import stdlib.models { Llama3_8B }
host Hopper = HGX8(gpu = H100_SXM, nic = CX7_400G)
host Blackwell = HGX8(gpu = B200, nic = CX7_400G)
"""


def _job(gpus: int) -> str:
    return f"""
job mixed {{
  model = Llama3_8B, placement = S, gpus = {gpus}
  parallel {{ tp = 8, pp = 1, dp = {gpus // 8} }}
  batch {{ global_batch = {gpus * 2}, micro = 1, seq = 8192 }}
}}
"""


def _w773(ws, **kw):
    fc = astral_dsl.forecast(ws, job="mixed", **kw)
    return [d.message for d in fc.diagnostics if d.code == "W773"]


def test_a_job_on_two_kinds_of_gpu_is_priced_as_the_first_and_says_so():
    ws = astral_dsl.compiles(HEAD + "rack R { hosts = 2 x Hopper, more = 2 x Blackwell }\n"
                             "site S { racks = 4 x R }\n" + _job(32), name="mixed.astral")
    assert _w773(ws) == ["job `mixed`: Seer prices all 32 of its GPUs as the first, `H100_SXM`, "
                         "and 16 differ: 16 `B200`; the forecast does not see them"]
    # its first 16 GPUs are the two Hopper hosts': one kind, nothing to say
    ws = astral_dsl.compiles(HEAD + "rack R { hosts = 2 x Hopper, more = 2 x Blackwell }\n"
                             "site S { racks = 4 x R }\n" + _job(16), name="first.astral")
    assert _w773(ws) == []


def test_a_scenario_that_derates_some_of_the_jobs_gpus_says_the_forecast_does_not_see_them():
    ws = astral_dsl.compiles(HEAD + "rack R { hosts = 4 x Hopper }\nsite S { racks = 4 x R }\n"
                             + _job(64) + """
scenario slow_host { set S.racks[1].hosts[2].gpus.flops_bf16 = 100 TFLOP/s }
scenario capped { set S.racks[0].hosts[0].gpus.power = 400 W }
scenario every_gpu { set S.racks[*].hosts[*].gpus.power = 400 W }
scenario outside { set S.racks[3].hosts[3].gpus.power = 400 W }
""", name="derated.astral")
    assert _w773(ws) == []
    assert _w773(ws, scenario="slow_host") == [
        "job `mixed`: Seer prices all 64 of its GPUs as the first, `H100_SXM`, and 8 differ: 8 "
        "`H100_SXM` with another peak FLOP/s; the forecast does not see them"]
    # the first host's GPUs capped: the others are unlike the first, which prices them
    assert _w773(ws, scenario="capped") == [
        "job `mixed`: Seer prices all 64 of its GPUs as the first, `H100_SXM`, and 56 differ: 56 "
        "`H100_SXM` with another power; the forecast does not see them"]
    assert _w773(ws, scenario="every_gpu") == []
    assert _w773(ws, scenario="outside") == []          # a host past the job's 64 GPUs


NIC_HEAD = """
import stdlib.hardware { H100_SXM, CX7_400G, CX7_2x200G, HGX8 }
import stdlib.models { Llama3_8B }
host Hopper = HGX8(gpu = H100_SXM, nic = CX7_400G)
host TwoPort = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
"""


def test_a_job_over_hosts_of_other_nics_is_priced_as_the_first_host_and_says_so():
    """Seer reads the NICs of the first host (their count, ports, port speed, protocol) for
    every rank: a job over hosts of two kinds of NIC was priced as the first host's, W773 said
    nothing (it compared GPUs alone)."""
    design = NIC_HEAD + "rack R { hosts = 2 x Hopper, more = 2 x TwoPort }\n" \
        "site S { racks = 4 x R }\n"
    ws = astral_dsl.compiles(design + _job(32), name="nics.astral")
    assert _w773(ws) == [
        "job `mixed`: Seer prices all 32 of its GPUs as the first, `H100_SXM`, and 16 differ: 16 "
        "`H100_SXM` on hosts whose NICs are 8 x 2 ports of 200 Gb/s, not the first's 8 x 400 "
        "Gb/s infiniband; the forecast does not see them"]
    # 20 GPUs: the two Hopper hosts' and 4 of the first TwoPort host's
    ws = astral_dsl.compiles(design + """
job mixed {
  model = Llama3_8B, placement = S, gpus = 20
  parallel { tp = 4, pp = 1, dp = 5 }
  batch { global_batch = 40, micro = 1, seq = 8192 }
}
""", name="part.astral")
    assert [m.split(" and ")[1] for m in _w773(ws)] == [
        "4 differ: 4 `H100_SXM` on hosts whose NICs are 8 x 2 ports of 200 Gb/s, not the first's "
        "8 x 400 Gb/s infiniband; the forecast does not see them"]
    ws = astral_dsl.compiles(design + _job(16), name="first.astral")
    assert _w773(ws) == []                       # the two Hopper hosts alone


def test_a_scenario_that_slows_some_hosts_nics_says_the_forecast_does_not_see_them():
    ws = astral_dsl.compiles(NIC_HEAD + "rack R { hosts = 4 x Hopper }\nsite S { racks = 4 x R }\n"
                             + _job(64) + """
scenario slow_nic { set S.racks[1].hosts[2].nics.port_speed = 200 Gb/s }
scenario slow_gpu_and_nic {
  set S.racks[1].hosts[2].nics.port_speed = 200 Gb/s
  set S.racks[1].hosts[2].gpus.power = 400 W
}
""", name="slow_nic.astral")
    assert _w773(ws) == []
    assert _w773(ws, scenario="slow_nic") == [
        "job `mixed`: Seer prices all 64 of its GPUs as the first, `H100_SXM`, and 8 differ: 8 "
        "`H100_SXM` on hosts whose NICs are 8 x 200 Gb/s infiniband, not the first's 8 x 400 "
        "Gb/s infiniband; the forecast does not see them"]
    assert _w773(ws, scenario="slow_gpu_and_nic")[0].split(" and 8 differ: ")[1] == (
        "8 `H100_SXM` with another power, on hosts whose NICs are 8 x 200 Gb/s infiniband, not "
        "the first's 8 x 400 Gb/s infiniband; the forecast does not see them")
