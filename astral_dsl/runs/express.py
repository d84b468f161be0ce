"""A run (a row of a runs table) as .astral source: a cluster of the row's system, its model and a
job with its layout, batch and software stack, compiled by the same compiler as any design and
forecast as `astral forecast` forecasts a job. Whatever the language cannot state about a row
makes it "not expressible", with the field and why: a row is never silently dropped.

The model: a stdlib model whose architecture is the row's (layers, hidden, heads, key/value
heads, experts and top-k equal where the row states them; stdlib/models.astral) lends what a
row has no column for (a head width other than hidden / heads, multi-head latent attention,
shared experts, leading dense layers, sliding windows, the activation); otherwise the model is
the row's fields alone, SwiGLU (GeLU for a GPT), and the row says so (`assumed`); a model whose
recipe builds what Seer cannot lower is not expressible, with what (runs/unmodelled.py)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.runs.deepseek import mtp_unread, recipe_layout
from astral_dsl.runs.parts import names_stdlib_system, system_of
from astral_dsl.runs.precision import precision_of
from astral_dsl.runs.releases import (TITAN_MICROBATCH_SIZE_FROM, TITAN_STAGES_PER_RANK, dated,
                                      release_of)
from astral_dsl.runs.stacks import stack_of, stated_settings, su_gpus
from astral_dsl.runs.system_spec import System
from astral_dsl.runs.table import Run
from astral_dsl.runs.unmodelled import unmodelled
from astral_dsl.seer.stages import derived_layout

MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "experts",
                "top_k", "shared_experts", "moe_ffn", "dense_layers", "activation", "head_dim",
                "kv_lora_rank", "q_lora_rank", "rope_head_dim", "v_head_dim", "window",
                "window_share", "shared_ffn", "mamba_layers", "attention_layers", "pattern",
                "mamba_state", "mamba_head_dim", "mamba_groups", "mamba_expand", "mamba_chunk",
                "activation_clamp", "expert_bias", "expert_groups", "group_top_k",
                "yarn_factor", "mamba_heads", "router_score", "aux_loss", "qk_norm", "nope_every",
                "mtp_layers", "mtp_pattern", "mtp_shared")


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


@lru_cache(maxsize=1)
def stdlib_models() -> Dict[str, Dict[str, object]]:
    """name -> fields of every model in stdlib/models.astral, read by the compiler."""
    from astral_dsl import resources
    from astral_dsl.workspace import Workspace
    from astral_dsl.analyses.walk import Resolver
    from astral_dsl.seer.job import _plain

    text = (resources.stdlib_dir() / "models.astral").read_text(encoding="utf-8")
    names = re.findall(r"^model\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.M)
    src = "import stdlib.models { " + ", ".join(names) + " }\n" + "\n".join(
        f"job probe_{n} {{ model = {n} }}" for n in names)
    design = Workspace.of_text(src, "<stdlib models>").design
    res = Resolver(design)
    out: Dict[str, Dict[str, object]] = {}
    for job in design.jobs:
        inst = res(job.field("model"))
        if inst is None:
            continue
        fields = {}
        for f in MODEL_FIELDS:
            v = inst.field(f)
            if v is not None:
                fields[f] = _plain(v)
        out[inst.template] = fields
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", unbracketed(text.lower()))


def unbracketed(text: str) -> str:
    r"""`text` without each `(` and what follows it up to the first `)` on its line, as
    `re.sub(r"\(.*?\)", "", text)` gives it, in linear time: that search scans to the end of
    the line from every `(` left open (a cell of 60,000 `(` took 12 s)."""
    out, at, closed = [], 0, -1
    while True:
        opened = text.find("(", at)
        if opened < 0:
            break
        if closed <= opened:    # else the first `)` after it is still the one found before
            closed = text.find(")", opened + 1)
            if closed < 0:      # no `)` after it: nor after any later `(`
                break
        line_end = text.find("\n", opened + 1, closed)
        if line_end >= 0:       # its line has no `)`: kept, as every `(` up to the line's end
            out.append(text[at:line_end])
            at = line_end
            continue
        out.append(text[at:opened])
        at = closed + 1
    out.append(text[at:])
    return "".join(out)


ROW_FIELDS = (("layers", "layers"), ("hidden", "hidden"), ("heads", "heads"),
              ("kv_heads", "kv_heads"), ("moe_experts", "experts"), ("moe_topk", "top_k"))


def match_model(row: Run) -> Optional[str]:
    """The stdlib model with the row's architecture (module docstring), or None."""
    models = stdlib_models()
    stated = [(r, m, row.count(r)) for r, m in ROW_FIELDS if row.count(r) is not None]
    if len([s for s in stated if s[0] in ("layers", "hidden", "heads")]) < 3:
        # no architecture in the row: a stdlib model of exactly its name
        n = _norm(row.model)
        exact = [k for k in models if _norm(k) == n]
        return exact[0] if len(exact) == 1 else None
    found = []
    for name, f in models.items():
        ok = all(int(f.get(m, 0) or (1 if m == "top_k" and f.get("experts") else 0)) == v
                 or (m == "kv_heads" and f.get("kv_lora_rank") and v == f.get("heads"))
                 for r, m, v in stated if not (m == "top_k" and not f.get("experts")))
        if ok and bool(f.get("experts")) == bool(row.count("moe_experts")):
            found.append(name)
    if len(found) > 1:          # equal architectures: the closest name
        n = _norm(row.model)
        found.sort(key=lambda k: (-_common(_norm(k), n), k))
    return found[0] if found else None


def _common(a: str, b: str) -> int:
    return sum(1 for x, y in zip(a, b) if x == y)


def _hybrid(row: Run) -> bool:
    text = (row.notes + " " + row.model).lower()
    return "mamba" in text or "hybrid" in text


def _model_fields(row: Run) -> Tuple[Optional[Dict[str, object]], str, List[str], Tuple[str, ...]]:
    """(fields, stdlib model lending extras, assumptions, (column, why) not) of the row's model."""
    name = match_model(row)
    if not name and (why := unmodelled(row.model)):
        return None, "", [], ("model", why)
    base = dict(stdlib_models().get(name, {})) if name else {}
    assumed: List[str] = []
    f: Dict[str, object] = dict(base)
    for r, m in (("layers", "layers"), ("hidden", "hidden"), ("ffn_hidden", "ffn"),
                 ("heads", "heads"), ("kv_heads", "kv_heads"), ("vocab", "vocab"),
                 ("moe_experts", "experts"), ("moe_topk", "top_k")):
        v = row.count(r)
        if v is not None and not (m == "kv_heads" and base.get("kv_lora_rank")):
            f[m] = v
    if row.count("moe_experts") and row.count("ffn_hidden"):
        f["moe_ffn"] = row.count("ffn_hidden")          # the tables' ffn is the expert's
        if base.get("ffn") and base.get("dense_layers"):
            f["ffn"] = base["ffn"]                        # the dense layers' width
    for need in ("layers", "hidden", "heads"):
        if need not in f:
            return None, "", [], (need, f"the row gives no `{need}` and no stdlib model is named "
                                        f"`{row.model}`")
    if not name:
        if _hybrid(row):
            return None, "", [], ("model", f"`{row.model}` is a hybrid Mamba/attention model "
                                  "(notes) that no stdlib model states: a row's cells cannot "
                                  "state its Mamba-2 layers nor their pattern")
        gpt = _norm(row.model).startswith("gpt") and not _norm(row.model).startswith("gptoss")
        f["activation"] = "gelu" if gpt else "swiglu"
        assumed.append(f"no stdlib model has this architecture: {f['activation']} MLPs, heads "
                       f"of hidden / heads, no shared experts assumed")
        if "vocab" not in f:
            f["vocab"] = 50304 if gpt else 32000
            assumed.append(f"vocabulary {f['vocab']:,} (the row gives none)")
    elif "vocab" not in f:
        assumed.append(f"vocabulary {f.get('vocab', 0):,} from stdlib.models {name}")
    return f, name or "", assumed, ()


def _routing(row: Run, fields: Dict[str, object], lent: str) -> Optional[str]:
    """Why the row's experts per token cannot be known, or None: experts of a model the stdlib
    does not lend (whose top_k would be the language's default, 1, unsaid: a row of 8 experts
    and no moe_topk was forecast at +584 % and fitted on), or a moe_topk with no experts (a
    dense model: it was dropped unsaid)."""
    if row.count("moe_topk") is not None and not fields.get("experts"):
        return (f"moe_topk = {row.count('moe_topk'):,} but the model has no experts (no "
                f"`moe_experts`{'' if not lent else f', nor stdlib.models {lent}'}): give both, "
                f"or neither for a dense model")
    if row.count("moe_experts") and row.count("moe_topk") is None and "top_k" not in fields \
            and not dict(stdlib_models().get(lent, {})).get("experts"):
        return (f"the row gives {row.count('moe_experts'):,} experts (moe_experts) but not how "
                f"many each token is routed to (`moe_topk`): give it")
    return None


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
    fields, lent, assumed, why_not = _model_fields(row)
    if fields is None:
        return NotExpressible(row, *why_not)
    routing = _routing(row, fields, lent)
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


