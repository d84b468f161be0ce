"""One forecast: lower the job, simulate the schedule, account the time; the FLOPs behind MFU
and HFU."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.seer import comm, rule
from astral_dsl.seer.calibration import Calibration
from astral_dsl.seer.comm_groups import straddle_notes
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.memory import MemoryEstimate, offload_obstacle
from astral_dsl.seer.operator_table import OperatorTable
from astral_dsl.seer.params import by_shape
from astral_dsl.seer.schedule import StageRun, simulate
from astral_dsl.seer.spec import JobSpec
from astral_dsl.seer.stages import full_recompute


@records.define
class Forecast:
    job: JobSpec
    gpu: str
    net: comm.Network
    lowering: Lowering
    runs: List[StageRun]
    iteration_time: float
    memory: MemoryEstimate
    chosen: Tuple[Tuple[str, int], ...] = ()          # runtime parameters picked by the rule
    notes: Tuple[str, ...] = ()
    breakdown: Dict[str, float] = attrs.field(factory=dict)
    stage: int = 0                                      # the stage the breakdown describes
    placement: str = ""
    diagnostics: List = attrs.field(factory=list)     # the job's warnings (seer.forecast)
    scenario: Optional[Tuple] = None     # (name, analyses.scenarios.Applied) under a scenario
    measured: int = 0      # rows of a measured operator table that priced operators (seer.forecast)

    @property
    def gpus(self) -> int:
        return self.job.parallel.gpus

    @property
    def tokens_per_s(self) -> float:
        return self.job.global_batch * self.job.seq / self.iteration_time

    def _peak(self) -> float:
        return self.lowering.c.peak * self.gpus * self.iteration_time

    @property
    def mfu(self) -> float:
        return model_flops(self.job) / self._peak()

    @property
    def hfu(self) -> float:
        return hardware_flops(self.job) / self._peak()

    @property
    def calibration(self) -> Calibration:
        """The constants this forecast was priced with."""
        return self.lowering.c.cal

    def envelope(self):
        """How far to trust this forecast: its regime, whether a calibration run of that regime
        was checked, and the error band (seer/envelope.py)."""
        from astral_dsl.seer.envelope import envelope

        env = envelope(self.job, self.gpu, self.calibration, self.net)
        # the band is the calibration's error of Seer's own costs: say which it does not cover
        return attrs.evolve(env, measured=self.measured) if self.measured else env

    def timeline(self, window=None, level: str = "op"):
        """The iteration's events: a seer.timeline.Timeline (columns; iterating it gives the
        Events)."""
        from astral_dsl.seer.timeline import timeline      # numpy: not on `check`'s path

        return timeline(self, window=window, level=level)


def layer_flops_per_token(job: JobSpec, layer: int) -> Tuple[float, float]:
    """(matmul FLOPs, attention FLOPs) of one layer's forward per token; attention counts the
    full s x s scores (Megatron's and PaLM's convention), or the window's."""
    m = job.model
    h, mats = m.hidden, m.mats
    kind = m.layer_kind(layer)
    if kind == "M":          # Mamba-2: its projections, and the scan as its "attention"
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        scan = 2 * (m.mamba_heads * (Q * P + 2 * N * P) + m.mamba_groups * Q * N)
        return 2 * m.mamba_params(), scan
    lin = 2 * m.attention_params() if kind in ("T", "*") else 0.0
    attn = 2 * m.attended(job.seq) * m.heads * (m.qk_dim + m.v_dim) if kind in ("T", "*") \
        else 0.0
    if kind == "*":
        return lin, attn
    if m.is_moe(layer):
        lin += (2 * mats * h * (m.moe_ffn * m.top_k + m.shared_width * m.shared_experts)
                + 2 * h * m.experts)
    else:
        lin += 2 * mats * h * m.ffn
    return lin, attn


def model_flops(job: JobSpec) -> float:
    """FLOPs of one iteration without recomputation: 3 x forward, the backward pass costing twice
    the forward (Narayanan et al. 2021, arXiv 2104.04473; docs/seer.md)."""
    m = job.model
    flops = by_shape(job, layer_flops_per_token)
    per_token = sum(sum(flops(L)) for L in range(m.layers + m.mtp_block))
    # the logits, and each MTP depth's again with its eh_proj (2 h -> h), as Megatron-Bridge
    # 0.6.2 counts them (training/utils/flop_utils.py: "MTP norms and proj", "Logit")
    per_token += 2 * m.hidden * m.vocab * (1 + m.mtp_layers) + m.mtp_layers * 4 * m.hidden ** 2
    return 3 * job.global_batch * job.seq * per_token


def hardware_flops(job: JobSpec) -> float:
    """Model FLOPs plus the recomputed forward FLOPs (with `mla_up_proj` recomputed, MLA's
    up-projections: 2 (q_lora q_width + kv_lora heads (head + value width)) a token; with `mlp`,
    a dense layer's MLP: 2 mats hidden ffn; torchtitan's every second matmul: the key
    projection, the output projection without TP and a gated MLP's w3, as lower.py re-runs
    them; a compiled torchtitan block's full recomputation without a dense layer's fc2, which
    lower_dense.py `_mlp_block_fwd` leaves out)."""
    extra = 0.0
    whole = frozenset(full_recompute(job))
    m = job.model
    fc2 = 2.0 * m.hidden * m.ffn if job.compiled_blocks else 0.0
    up = 0.0
    mlp = 2.0 * m.mats * m.hidden * m.ffn \
        if "mlp" in job.recomputed and job.recompute != "full" else 0.0
    if job.every_second_mm and not m.mla:
        up = 2.0 * m.hidden * (m.kv_heads * m.head_dim
                               + (m.heads * m.v_dim if job.parallel.tp == 1 else 0.0))
        mlp = 2.0 * m.hidden * m.ffn if m.mats == 3 else 0.0
    if m.mla and "mla_up_proj" in job.recomputed and job.recompute != "full":
        up = 2.0 * ((m.q_lora * m.q_width if m.q_lora else 0.0)
                    + m.kv_lora * m.heads * (m.head_dim + m.v_dim))
    flops = by_shape(job, layer_flops_per_token)
    for L in range(m.layers + m.mtp_block):
        lin, attn = flops(L)
        if L in whole:
            extra += lin + attn - (fc2 if m.dense_mlp(L) else 0.0)
        elif job.recompute == "selective" and job.attention == "unfused":
            extra += attn
        else:
            if up and m.layer_kind(L) in ("T", "*"):
                extra += up
            if mlp and m.dense_mlp(L):
                extra += mlp
    return model_flops(job) + job.global_batch * job.seq * extra




def run(job: JobSpec, gpu, net: comm.Network, table: Optional[OperatorTable] = None,
        notes=(), calibration: Optional[Calibration] = None) -> Forecast:
    """Forecast `job`; an undeclared micro-batch or number of virtual stages is chosen by the
    rule (rule.py). `calibration`: the fitted constants (default: the shipped fit)."""
    costs = Costs.of(job, gpu, table, calibration)
    best = rule.choose(job, gpu, net, costs, lambda c: _forecast(c.job, gpu, net, c.lowering,
                                                                 c.memory))
    chosen: List[Tuple[str, int]] = []
    if not job.micro:
        chosen.append(("micro", best.job.micro))
    if job.parallel.schedule == "interleaved" and not job.parallel.v:
        chosen.append(("virtual_stages", best.job.parallel.v))
    if job.recompute == "auto":
        chosen.append(("recompute", best.job.recompute))
        if best.job.recompute_layers is not None:
            chosen.append(("recompute_layers", best.job.recompute_layers))
    if job.offload_layers is None and offload_obstacle(job, gpu.host_bw) is None:
        chosen.append(("offload_layers", best.job.offload_layers))
    best.chosen = tuple(chosen)
    best.notes = (tuple(notes) + tuple(net.notes)
                  + straddle_notes(best.job, net, best.lowering.stage_groups)
                  + _padding_note(job) + _etp_note(job) + _dp_note(best.job)
                  + _batch_note(best.job))
    return best


def _dp_note(job: JobSpec) -> Tuple[str, ...]:
    """What a job that states neither `gpus` nor `dp` runs on: dp 1, its tp x pp x cp GPUs
    of the placement, not all of them (docs/seer.md, Defaults)."""
    if job.dp_stated or job.gpus is not None:
        return ()
    par = job.parallel
    return (f"neither `gpus` nor `dp` stated: dp {par.dp:,}, so the job runs on tp x pp x cp = "
            f"{par.tp} x {par.pp} x {par.cp} = {par.gpus:,} GPUs of its placement, not all of "
            f"them: state `gpus` (dp = gpus / (tp x pp x cp)) or `dp`",)


def _batch_note(job: JobSpec) -> Tuple[str, ...]:
    """What a job that states no global batch is forecast with: Megatron-LM's default, one
    micro-batch per data-parallel rank (--global-batch-size defaults to micro-batch-size x
    data-parallel size, megatron/training/arguments.py), which leaves the pipeline one
    micro-batch to fill it with: the step's figures follow it more than any other number."""
    if job.batch_stated:
        return ()
    dp, micro = job.parallel.dp, job.micro or 1
    return (f"global batch not stated: micro x dp = {micro} x {dp:,} = {job.global_batch:,} "
            f"sequence{'s' if job.global_batch != 1 else ''} of {job.seq:,} tokens "
            f"(Megatron-LM's --global-batch-size default): "
            f"state `batch {{ global_batch = ... }}`",)


def _etp_note(job: JobSpec) -> Tuple[str, ...]:
    """What an MoE job with TP that does not state `etp` is forecast with: expert tensor
    parallelism 1, Megatron-Bridge's setting with EP > 1 (0.6.2 models/transformer_config.py),
    where Megatron-Core's own default is the TP size (model_parallel_config.py)."""
    par = job.parallel
    if not job.model.experts or par.tp <= 1 or par.etp_stated or job.framework != "megatron":
        return ()
    return (f"etp 1 assumed: each routed expert whole on one GPU of its EP group (Megatron-"
            f"Bridge's setting); Megatron-Core and Megatron-LM default to etp = tp ({par.tp}): "
            f"state `etp` in `parallel` if the job runs so",)


def _padding_note(job: JobSpec) -> Tuple[str, ...]:
    """What padded token dropping leaves out, and how little of it the calibration checked."""
    if not job.padded or job.cuda_graphs:
        return ()
    return ("pad_to_capacity: each MoE layer's forward is forecast without its wait for the "
            "token counts (Megatron-Core's drop-and-pad dispatch has none); the only calibration "
            "runs read as padded are NeMo 25.09's five token-drop rows and NeMo 25.04-25.07's "
            "Mixtral and Llama 4 rows, whose tables do not state it (the recipes' token-drop "
            "defaults: docs/runs.md)",)


def iteration(job: JobSpec, gpu, net: comm.Network, calibration: Optional[Calibration] = None
              ) -> Tuple[JobSpec, float]:
    """The job run() forecasts and its iteration time, without the memory estimate and the
    breakdown where the rule has one candidate (a job whose runtime parameters are stated, as
    the calibration holds them: runs/fit.py): what run() simulates then, and all it simulates."""
    cands = rule.candidates(job)
    if len(cands) != 1:
        fc = run(job, gpu, net, calibration=calibration)
        return fc.job, fc.iteration_time
    from astral_dsl.seer.walk import iteration_time

    low = Lowering(cands[0], Costs.of(job, gpu, None, calibration), net)
    return cands[0], iteration_time(low, cands[0].microbatches)


def _forecast(job: JobSpec, gpu, net, low: Lowering, mem: MemoryEstimate) -> Forecast:
    runs, total = simulate(low, job.microbatches)
    fc = Forecast(job, gpu.name, net, low, runs, total, mem)
    fc.stage, fc.breakdown = _breakdown(fc)
    return fc


def _breakdown(fc: Forecast) -> Tuple[int, Dict[str, float]]:
    """Where the time of one representative rank goes: the stage with the most busy compute.
    The parts add up to the iteration time."""
    low, runs, m = fc.lowering, fc.runs, fc.job.microbatches
    v = fc.job.parallel.v
    # every (chunk, phase) of a stage runs once per micro-batch
    templates = [[low.template(i, c, ph) for c in range(v) for ph in ("F", "B")]
                 for i in range(len(runs))]
    best = max(range(len(runs)), key=lambda i: (sum(t.compute for t in templates[i]), -i))
    run = runs[best]
    out = {"compute": 0.0, "tp_comm": 0.0, "cp_comm": 0.0, "ep_comm": 0.0, "pp_comm": 0.0,
           "dp_comm": 0.0, "offload": 0.0, "host": 0.0, "bubble": 0.0, "optimizer": 0.0}
    for tpl in templates[best]:
        out["compute"] += m * tpl.compute
        out["host"] += m * tpl.host
        for stream, t in tpl.exposed.items():
            key = "offload" if stream.startswith("offload") else f"{stream}_comm"
            out[key] = out.get(key, 0.0) + m * t
    waits = run.waits()
    wait_pp, wait_dp = sum(run.waits_pp(waits)), sum(w for w, _ in run.gated.values())
    out["pp_comm"] += wait_pp + sum(run.blocked.values())
    out["dp_comm"] += wait_dp + sum(s for _, s in run.gated.values())
    out["bubble"] += sum(waits) - wait_pp - wait_dp
    dp_end = max([run.backward_end] + [e for _, e, _ in run.dp])
    out["dp_comm"] += dp_end - run.backward_end
    out["bubble"] += run.optimizer[0] - dp_end
    out["optimizer"] = run.optimizer[1] - run.optimizer[0]
    if run.gather[0] >= run.optimizer[1]:      # the parameter gather after the step
        out["dp_comm"] += run.gather[1] - run.gather[0]
    out["bubble"] += fc.iteration_time - run.finish
    return best, out
