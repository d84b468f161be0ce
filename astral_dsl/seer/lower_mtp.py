"""The lowering's multi-token prediction (a mixin of lower.Lowering): what an MTP depth runs
beside its transformer layer, which the last chunk holds as a layer of its own
(stages.chunk_layers).

Megatron-Core 0.16.0 transformer/multi_token_prediction.py, MultiTokenPredictionLayer, per depth:
the embedding of the input shifted by one token (`_get_embeddings`: roll_tensor, then the
word embedding, which the last stage holds for it: models/gpt/gpt_model.py "MTP need embedding
layer in mtp process stage"), its norm and the hidden state's (`enorm`, `hnorm`), their
concatenation (`torch.cat`, 2 h a token) projected back to h (`eh_proj`, column-parallel, its
output gathered over TP), the transformer layer (built from the decoder's last layer's spec:
models/gpt/gpt_layer_specs.py, get_gpt_mtp_block_spec), its `final_layernorm`; then
gpt_model.py runs the output layer and the loss on it again. The backward mirrors them (the
concatenation's gradient is two views of one tensor: nothing to move)."""
from __future__ import annotations

from astral_dsl.seer.lower_dense import HEAD


class MtpOps:
    """Lowering's MTP operators (attributes: lower.Lowering)."""

    def _mtp_fwd(self, b):
        """Each depth's operators besides its transformer layer, after the model's head."""
        m, elem, tokens, h = self.job.model, self.elem, self.tokens, self.job.model.hidden
        for _ in range(m.mtp_layers):
            self._embed_fwd(b, "mtp ", HEAD)
            self._norm_fwd(b, "mtp enorm", HEAD)
            self._norm_fwd(b, "mtp hnorm", HEAD)
            self._ew(b, "mtp concat", 2 * tokens * 2 * h * elem, HEAD)
            self._linear(b, "mtp eh proj", tokens, h / self.tp, 2 * h, HEAD)
            if self.tp > 1:
                self._coll(b, "mtp eh all-gather", "ag", "tp", tokens * h * elem, HEAD)
            self._head_fwd(b, "mtp ")

    def _mtp_bwd(self, b):
        """Their backward, before the model's head's."""
        m, elem, tokens, h = self.job.model, self.elem, self.tokens, self.job.model.hidden
        for _ in range(m.mtp_layers):
            self._head_bwd(b, "mtp ")
            self._linear_bwd(b, "mtp eh proj", tokens, h / self.tp, 2 * h, HEAD, column=True)
            for name in ("mtp hnorm bwd", "mtp enorm bwd"):
                self._ew(b, name, 3 * self.sp_tokens * h * elem, HEAD, "norm")
            self._embed_bwd(b, "mtp ", HEAD)
