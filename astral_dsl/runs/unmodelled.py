"""The models of the runs tables that no stdlib model states because Seer cannot lower what their
recipes build: a row of one is not expressible (`model`) with the feature Seer lacks, not merely
for a missing `layers` (docs/runs.md, "Models Seer cannot state"; docs/seer.md, "Stop 65").

Read in Megatron-Bridge 0.6.0's and 0.6.2's wheels (recipes/ and perf_recipes/, which agree on
what is cited here):
- Nemotron 3 Super (120B-A12B) and Ultra (550B-A55B) are "LatentMoE" models (recipes/nemotronh/
  h100/nemotron_3_super.py docstring; perf_recipes/nemotronh/gb300/nemotronh.py: "512 experts,
  latent MoE, MTP"): each MoE layer projects the tokens from the hidden width down to
  `moe_latent_size` before the experts and back after them (models/nemotronh/nemotron_h_bridge.py
  `fc1_latent_proj`, `fc2_latent_proj`; Megatron-Core 0.19.0 transformer/mlp.py: an expert's
  input and output width is `moe_latent_size`; transformer/moe/moe_layer.py builds the two
  projections). Their recipes also train 2 multi-token-prediction depths repeating one hybrid
  block (`mtp_num_layers = 2`, `mtp_use_repeated_layer = True`, recipes/nemotronh/h100/
  nemotron_3_super.py and nemotron_3_ultra.py; the block's pattern, `mtp_hybrid_override_pattern`,
  from the Hugging Face config: models/nemotronh/nemotron_h_bridge.py). Their widths, layers and
  patterns are in no code: the recipes read them from the Hugging Face config
  (`AutoBridge.from_hf_pretrained("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16")`, "...-Ultra-
  550B-A55B-BF16").
- DeepSeek-V4 Flash (models/deepseek/deepseek_v4_bridge.py docstring: "HyperConnectionModule",
  "CompressedSparseAttention / CSAIndexer / Compressor", hash-routed MoE layers with a token ->
  expert table `tid2eid`; its architecture from its Hugging Face config, recipes/deepseek/gb200/
  deepseek_v4.py)."""
from __future__ import annotations

from typing import Optional

from astral_dsl.runs.precision import squeezed

_LATENT = ("is a latent MoE: its experts run in a narrower width (`moe_latent_size`) between a "
           "projection down from the hidden width and one back, for which Seer has no "
           "operator; and no code in reach states its widths, layers nor the block of the 2 "
           "multi-token-prediction depths its recipes repeat (they read them from its Hugging "
           "Face config)")
# (model label prefixes, as precision.squeezed, with "v3" spelt as "3": the tables' labels), why
UNMODELLED = (
    (("nemotron3super",), f"Nemotron 3 Super {_LATENT}"),
    (("nemotron3ultra",), f"Nemotron 3 Ultra {_LATENT}"),
    (("deepseekv4",),
     "DeepSeek-V4's compressed sparse attention (a compressor and an indexer per layer), its "
     "hyper-connections and its hash-routed MoE layers have no operator in Seer, and no code "
     "in reach states its widths or layers (Megatron-Bridge's recipe reads them from its "
     "Hugging Face config)"),
)


def unmodelled(label: str) -> Optional[str]:
    """Why Seer cannot state the model a row labels `label` (module docstring), or None."""
    name = squeezed(label).replace("nemotronv3", "nemotron3")
    return next((why for prefixes, why in UNMODELLED if name.startswith(prefixes)), None)
