"""An MoE router's kernels after its GEMM, as Megatron-Core runs them: counted from the code, each
a (kernels, passes) pair, `passes` the reads and writes of a [tokens x experts] fp32 tensor
(a bool one counts a quarter); kernels on [tokens x k] or [experts] tensors count as kernels of
no bytes. lower_moe.py prices them as one element-wise op (bytes at the streaming bandwidth
plus KERNEL_S a kernel, costs.py), forward after the router GEMM and backward before its dgrad.

Megatron-Core 0.16.0 transformer/moe/router.py (TopKRouter.forward, routing) and moe_utils.py,
the path of `moe_router_fusion = False` (its default, 0.14 to 0.16 transformer_config.py; 0.12
and 0.13 have no fused router):
- the benchmark's random logits (`moe_router_force_load_balancing`, every performance recipe):
  RandomSTE.forward, `logits.clone().normal_()`: 2 kernels, 3 passes; its backward passes the
  gradient through.
- topk_routing_with_score_function. Softmax (`moe_router_pre_softmax = False`, Qwen3's and
  GPT-OSS's providers): torch.topk on the logits and a softmax of the k (2 kernels, 1 pass);
  backward the softmax's and the top-k's (zeros and a scatter: 3 kernels, 1 pass).
  Sigmoid with the expert bias (DeepSeek-V3's, Kimi K2's and Nemotron 3's providers:
  `moe_router_score_function = "sigmoid"`, `moe_router_enable_expert_bias`, a scaling factor and
  `moe_router_group_topk` set, 1 group or more): sigmoid and the bias (2 kernels, 4 passes),
  group_limited_topk (the groups' top-2 sum, their top-k, a zeroed mask and its scatter, the
  expanded mask's copy, its bool and inverse, masked_fill, the top-k: 10 kernels, 7 passes),
  the gather of the k scores, their normalisation (sum, eps, divide) and the scaling (5 kernels
  of k); backward the scaling's and normalisation's (5 kernels of k), the gather's (zeros and a
  scatter-add, 1 pass) and the sigmoid's (3 passes): 8 kernels, 4 passes.
- the probabilities and the map built from the top k: zeros_like and a scatter, zeros_like,
  int, a scatter and bool (6 kernels, 5.25 passes); backward a gather of the probabilities'
  gradient (1 kernel, 1 pass).
- a load-balancing loss (`moe_aux_loss_coeff` > 0): compute_routing_scores_for_aux_loss (a
  softmax, 2 passes; or a sigmoid, its sum and the division, 4 kernels, 5 passes), its top-k (1
  pass) and map (4 kernels, 4.25 passes); the tokens per expert (a sum of the map, 0.25 pass);
  switch_load_balancing_loss_func (the probabilities' sum, 1 pass, and 3 kernels of experts);
  the loss tracker's add; `seq_aux_loss` divides by the batch (1 kernel), `global_aux_loss`
  accumulates the counts (3 kernels). Backward: MoEAuxLossAutoScaler's scaled ones (2), the
  loss's 2 products, the sum's broadcast copied (1 pass) and the scores' backward (softmax: 1
  kernel, 3 passes; sigmoid with its normalisation: 5 kernels, 10 passes), the batch division
  of `seq_aux_loss` (1), and the sum of the two gradients of the logits (1 kernel, 3 passes).
- the expert bias's token count (`_apply_expert_bias`: a sum of the map and an add, 0.25 pass).

Transformer Engine's fused router (`moe_router_fusion = True`; TE 2.11 pytorch/router.py and
csrc/extensions/router.cpp, whose outputs are at::empty): fused_topk_with_score_function (1
kernel: reads the logits, writes the probabilities, the map and the intermediate scores: 3.25
passes; backward 1 kernel reading the gradient, the scores and the map: 3.25 passes);
fused_compute_score_for_moe_aux_loss (1 kernel, 3.25 passes; backward 1, 3) and
fused_moe_aux_loss (1 kernel reading the scores, 1 pass; backward 1 writing their gradient, 1
pass); the random logits, the token counts, the tracker, the batch division, the expert bias's
count, the autoscaler and the gradients' sum run as in the unfused path."""
from __future__ import annotations

from typing import Tuple

# (kernels, passes) per piece: module docstring. Forward, then backward.
RANDOM = ((2, 3.0), (0, 0.0))
TOPK = {   # (score function, fused)
    ("softmax", False): ((2, 1.0), (3, 1.0)),
    ("sigmoid", False): ((17, 11.0), (8, 4.0)),
    ("softmax", True): ((1, 3.25), (1, 3.25)),
    ("sigmoid", True): ((1, 3.25), (1, 3.25)),
}
SCATTER = ((6, 5.25), (1, 1.0))                  # unfused only (the fused kernel writes both)
AUX_SCORES = {   # (score function, fused): the loss's own scores, top-k and map
    ("softmax", False): ((6, 7.25), (1, 3.0)),
    ("sigmoid", False): ((9, 10.25), (5, 10.0)),
    ("softmax", True): ((1, 3.25), (1, 3.0)),
    ("sigmoid", True): ((1, 3.25), (1, 3.0)),
}
# the token counts, the loss and the tracker (unfused: probabilities' sum + 3 kernels;
# fused: fused_moe_aux_loss), the autoscaler and the loss's products (unfused: 2 + 2 and the
# broadcast's copy; fused: 2 and fused_moe_aux_loss's backward), the gradients' sum
AUX_LOSS = {False: ((6, 1.25), (6, 4.0)), True: ((3, 1.25), (4, 4.0))}
AUX_KIND = {"aux_loss": ((0, 0.0), (0, 0.0)), "seq_aux_loss": ((1, 0.0), (1, 0.0)),
            "global_aux_loss": ((3, 0.0), (0, 0.0))}
EXPERT_BIAS = ((2, 0.25), (0, 0.0))              # sigmoid routers (module docstring)


def router_kernels(score: str, aux: str, fused: bool, backward: bool) -> Tuple[int, float]:
    """(kernels, passes over tokens x experts fp32) of an MoE router's pass after its GEMM:
    `score` softmax | sigmoid, `aux` none | aux_loss | seq_aux_loss | global_aux_loss, `fused`
    Transformer Engine's fused kernels (module docstring)."""
    pieces = [RANDOM, TOPK[(score, fused)]]
    if not fused:
        pieces.append(SCATTER)
    if aux != "none":
        pieces += [AUX_SCORES[(score, fused)], AUX_LOSS[fused], AUX_KIND[aux]]
    if score == "sigmoid":
        pieces.append(EXPERT_BIAS)
    side = 1 if backward else 0
    return (sum(p[side][0] for p in pieces), sum(p[side][1] for p in pieces))
