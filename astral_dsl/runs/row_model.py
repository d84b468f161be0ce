"""The model a run (a row of a runs table) states, for runs/express.py: a stdlib model whose
architecture is the row's (layers, hidden, heads, key/value heads, experts and top-k equal where
the row states them; stdlib/models.astral) lends what a row has no column for (a head width other
than hidden / heads, multi-head latent attention, shared experts, leading dense layers, sliding
windows, the activation); otherwise the model is the row's fields alone, SwiGLU (GeLU for a GPT),
and the row says so (`assumed`); a model whose recipe builds what Seer cannot lower is not
expressible, with what (runs/unmodelled.py)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from astral_dsl.runs.table import Run
from astral_dsl.runs.unmodelled import unmodelled

MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "experts",
                "top_k", "shared_experts", "moe_ffn", "dense_layers", "activation", "head_dim",
                "kv_lora_rank", "q_lora_rank", "rope_head_dim", "v_head_dim", "window",
                "window_share", "shared_ffn", "mamba_layers", "attention_layers", "pattern",
                "mamba_state", "mamba_head_dim", "mamba_groups", "mamba_expand", "mamba_chunk",
                "activation_clamp", "expert_bias", "expert_groups", "group_top_k",
                "yarn_factor", "mamba_heads", "router_score", "aux_loss", "qk_norm", "nope_every",
                "mtp_layers", "mtp_pattern", "mtp_shared")


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


def model_fields(row: Run) -> Tuple[Optional[Dict[str, object]], str, List[str], Tuple[str, ...]]:
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


def routing_unknown(row: Run, fields: Dict[str, object], lent: str) -> Optional[str]:
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

