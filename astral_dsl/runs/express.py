"""A run (a row of a runs table) as .astral source: a cluster of the row's system, its model and a
job with its layout, batch and software stack, compiled by the same compiler as any design and
forecast as `astral forecast` forecasts a job. Whatever the language cannot state about a row
makes it "not expressible", with the field and why: a row is never silently dropped. The row's
model (a stdlib model lending what the row has no column for, or the row's fields alone) is
runs/row_model.py's; this module writes the cluster, the model's fields and the job."""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from astral_dsl import records
from astral_dsl.runs.deepseek import mtp_unread, recipe_layout
from astral_dsl.runs.parts import names_stdlib_system, system_of
from astral_dsl.runs.precision import precision_of
from astral_dsl.runs.releases import (TITAN_MICROBATCH_SIZE_FROM, TITAN_STAGES_PER_RANK, dated,
                                      release_of)
from astral_dsl.runs.row_model import model_fields, routing_unknown
from astral_dsl.runs.stacks import stack_of, stated_settings, su_gpus
from astral_dsl.runs.system_spec import System
from astral_dsl.runs.table import Run
from astral_dsl.seer.stages import derived_layout


@records.frozen
class Expressed:
    run: Run
    source: str                      # the .astral text
    job: str                         # its job's name
    system: str
    model: str                       # the stdlib model lending its extras, or ""
    assumed: Tuple[str, ...]
    root: str = ""                   # where its imports resolve (a --gpu-file's project)
    file: str = ""                   # the --gpu-file its system comes from, or ""


@records.frozen
class NotExpressible:
    run: Run
    field: str
    reason: str


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not v.is_integer():
        return f"{v * 100:g} %" if v <= 1 else f"{v:g}"
    if isinstance(v, (int, float)):
        return str(int(v))
    if isinstance(v, tuple):                 # a list of names
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def express(row: Run, systems: Optional[Dict[str, System]] = None) -> object:
    """The row as .astral source (Expressed) or why it cannot be (NotExpressible). `systems`:
    a user's own (runs/systems.py, `--gpu-file`), tried before the stdlib's."""
    if row.problems:
        field, why = row.problems[0]
        return NotExpressible(row, field, why)
    system, how = (None, "")
    if systems:                       # a user's --gpu-file first (runs/systems.py)
        from astral_dsl.runs.systems import match

        system, how = match(row, list(systems.values()))
        if how:
            return NotExpressible(row, "system", how)
        if system is not None and system.problem:
            return NotExpressible(row, "system", f"block `{system.key}` of {system.file}: "
                                                 f"{system.problem}")
    assumed_system = ""
    if system is None:
        system, field, how = system_of(row.system, row.gpu)
        if system is None:
            return NotExpressible(row, field, how)
        if not names_stdlib_system(f"{row.system} {row.gpu}"):
            # "Lab-H100-Pod": the user's cluster, taken to be the stdlib's by its GPU alone
            assumed_system = (f"system {system.key} (stdlib.systems {system.su}, "
                              f"{system.fabric}) for `{row.system or '(empty)'}`, by its GPU: "
                              "your cluster's hosts and network may differ (--gpu-file)")
    prec, prec_how = precision_of(row.precision, row.gpu, release_of(row))
    if prec is None:
        return NotExpressible(row, "precision", prec_how)
    fields, lent, assumed, why_not = model_fields(row)
    if fields is None:
        return NotExpressible(row, *why_not)
    routing = routing_unknown(row, fields, lent)
    if routing is not None:
        return NotExpressible(row, "moe_topk", routing)
    gpus = row.count("gpus")
    seq = row.count("seq_len")
    gbs = row.count("gbs")
    for need, v in (("gpus", gpus), ("seq_len", seq), ("gbs", gbs)):
        if v is None:
            return NotExpressible(row, need, f"the row gives no `{need}`")
    tp, pp, cp = row.count("tp", 1), row.count("pp", 1), row.count("cp", 1)
    ep = row.count("ep", 1) if row.used("ep") else 1
    if gpus % (tp * pp * cp):
        return NotExpressible(row, "gpus", f"{gpus} GPUs are not a multiple of tp x pp x cp = "
                                           f"{tp * pp * cp}")
    dp = gpus // (tp * pp * cp)
    # a sharding group shards the ranks of one TP x PP position: torchtitan's device mesh
    # (torchtitan/distributed/parallel_dims.py ParallelDims._validate: dp_replicate x dp_shard x
    # cp x tp x pp = world size; FSDP on dp_shard x cp), Megatron-FSDP's on the DP x CP group.
    # So it divides DP x CP; a group that does not (1,000,000 GPUs on 64) was taken as `on`
    fsdp = row.count("fsdp")
    if fsdp is not None and fsdp > 1 and (dp * cp) % fsdp:
        return NotExpressible(row, "fsdp", f"a sharding group of {fsdp:,} GPUs does not divide "
                                           f"the {dp * cp:,} data- and context-parallel ranks "
                                           f"it shards ({gpus:,} GPUs / (tp x pp = {tp * pp}))")
    moe = bool(fields.get("experts"))
    stack = stack_of(row, moe, tp, pp, dp, hybrid=bool(fields.get("mamba_layers")
                                                        or fields.get("pattern")))
    assumed = list(assumed) + list(stack.assumed) + [assumed_system] * bool(assumed_system)
    job: Dict[str, object] = {"model": "M", "placement": "Cluster", "gpus": gpus,
                              "dtype": prec[0]}
    if prec[0] == "fp8":
        job["fp8_recipe"] = prec[1]
    # the cell is full, selective or none, a remark in parentheses allowed (runs/table.py
    # rejects any other word), or empty: Seer's rule
    job["recompute"] = row.recompute.split("(")[0].strip().lower() or "auto"
    if job["recompute"] == "auto" and "recompute" not in dict(stack.fields):
        assumed.append("activation recomputation (and offloading, with one pipeline stage) "
                       "chosen by Seer's rule: the fastest that fits (the row does not say)")
    job.update(dict(stack.fields))
    par: Dict[str, object] = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep}
    par.update(dict(stack.parallel))
    par.setdefault("sp", tp > 1)
    vp = row.count("vp") if row.used("vp") else None
    said = dict(stated_settings(row))
    interleaved = said["interleaved"] and pp > 1
    if vp and vp > 1:
        par["schedule"] = "interleaved"
        par["virtual_stages"] = vp
    elif interleaved and stack.framework == "torchtitan":
        par["schedule"] = "interleaved"
        par["virtual_stages"] = TITAN_STAGES_PER_RANK
        assumed.append(f"{TITAN_STAGES_PER_RANK} virtual stages per rank (torchtitan's default "
                       f"for an interleaved schedule)")
    elif interleaved:
        par["schedule"] = "interleaved"
        assumed.append("virtual stages chosen by Seer's rule (interleaved, count not published)")
    v = par.get("virtual_stages", 1)
    release = release_of(row)
    layout = recipe_layout(row, release, stack.framework, fields["layers"], pp, v)
    unread = mtp_unread(row, release, stack.framework)
    if unread:
        assumed.append(unread)
    if layout:
        assumed.append(f"pipeline layout [{', '.join(map(str, layout))}] (Megatron-Bridge's "
                       f"DeepSeek-V3 recipe: set_deepseek_v3_pipeline_model_parallel_layout)")
    else:
        layout = derived_layout(fields["layers"], pp, v,     # as Seer derives it (stages.py)
                                stack.framework)
    if layout and v > 1:
        par["layout"] = layout
    elif layout:
        par["stages"] = layout
    batch: Dict[str, object] = {"global_batch": gbs, "seq": seq}
    mbs = row.count("mbs")
    when = dated(row)
    if stack.framework == "torchtitan" and pp > 1 and when and \
            when < TITAN_MICROBATCH_SIZE_FROM and (gbs // dp) % pp == 0:
        batch["micro"] = gbs // dp // pp
        assumed.append(f"{pp} pipeline micro-batches, one per stage (torchtitan's default "
                       f"before 0.1.0)")
    elif stack.framework == "torchtitan" and pp > 1:
        batch["micro"] = 1
        assumed.append("pipeline micro-batches of 1 sequence (torchtitan's default)")
    elif mbs:
        batch["micro"] = mbs
    else:
        assumed.append("micro-batch chosen by Seer's rule (not published)")
    accumulation = said["accumulation"]
    if stack.framework == "automodel" and pp > 1 and accumulation and accumulation > 1:
        # NeMo AutoModel runs the pipeline schedule once per gradient-accumulation step
        # (nemo_automodel 0.7.0 recipes/llm/train_ft.py: pp_batch_size is the local batch,
        # schedule.step() per accumulation batch)
        batch["pipeline_runs"] = accumulation
        assumed.append("the pipeline schedule run once per gradient-accumulation step (NeMo "
                       "AutoModel's training loop; GA published)")
    nsu = -(-gpus // max(1, su_gpus(system, job.get("hosts_per_rack"))))
    taken = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", system.prelude))
    site, model = _fresh("Cluster", taken), _fresh("M", taken)
    job["model"], job["placement"] = model, site
    src = [system.header(),
           f"site {site} {{ sus = {nsu} x {system.su}, fabric = {system.fabric} }}",
           f"model {model} {{"]
    src += [f'  {k} = "{v}"' if k in ("pattern", "mtp_pattern") else f"  {k} = {_value(v)}"
            for k, v in fields.items()]
    src.append("}")
    name = _fresh("run_" + re.sub(r"[^A-Za-z0-9_]", "_", row.id), taken)
    src.append(f"job {name} {{")
    src += [f"  {k} = {_value(v)}" for k, v in job.items()]
    src.append("  parallel {")
    for k, v in par.items():
        if k in ("stages", "layout"):
            src.append(f"    {k} = [" + ", ".join(map(str, v)) + "]")
        else:
            src.append(f"    {k} = {_value(v)}")
    src.append("  }")
    src.append("  batch {")
    src += [f"    {k} = {_value(v)}" for k, v in batch.items()]
    src.append("  }")
    src.append("}")
    return Expressed(row, "\n".join(src) + "\n", name, system.key, lent, tuple(assumed),
                     system.root, system.file)


# the row's column each field the expression writes comes from (for a diagnostic about it)
COLUMN_OF = {"layers": "layers", "hidden": "hidden", "ffn": "ffn_hidden", "moe_ffn": "ffn_hidden",
             "heads": "heads", "kv_heads": "kv_heads", "vocab": "vocab", "experts": "moe_experts",
             "top_k": "moe_topk", "gpus": "gpus", "dtype": "precision",
             "fp8_recipe": "precision", "recompute": "recompute", "tp": "tp", "pp": "pp",
             "dp": "gpus", "cp": "cp", "ep": "ep", "virtual_stages": "vp", "schedule": "vp",
             "stages": "pp",
             "layout": "pp", "global_batch": "gbs", "micro": "mbs", "seq": "seq_len"}


def column_of(e: Expressed, diagnostic, default: str) -> str:
    """The row's column behind what `diagnostic` (about the compiled expression `e`) points
    at: the field on its line, else `default`."""
    span = diagnostic.span
    if span is None or not span.file.startswith("<runs row"):     # the stdlib's, say
        return default
    lines = e.source.split("\n")
    n = span.start.line
    m = re.match(r"\s*([A-Za-z_]\w*)\s*=", lines[n - 1]) if 0 < n <= len(lines) else None
    return COLUMN_OF.get(m.group(1), default) if m else default


def _fresh(name: str, taken) -> str:
    """`name`, or with underscores added until the prelude does not use it."""
    while name in taken:
        name += "_"
    return name


