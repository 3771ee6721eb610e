"""BERTScore inference: text -> (token ids, hidden states of one layer), as bert-score 0.3.11 computed them
under CXR-Report-Metric's pinned transformers 3.0.1.

bert-score's `sent_encode` strips the text, encodes it with RoBERTa's byte-level BPE *with a leading space*
(`add_prefix_space=True`), adds <s> ... </s>, truncates to the tokenizer's 512, and encodes an empty text as
<s></s>. The leading space is fragile in the reference: bert-score 0.3.11 on transformers >= 4.17 loses it (its
GPT2Tokenizer check fails for RobertaTokenizer, which stopped subclassing GPT2Tokenizer in 4.17), any bert-score
with `use_fast_tokenizer=True` loses it (RobertaTokenizerFast passes neither check), and on transformers 5 the
encode-time flag is ignored, so the tokenizer must be loaded with it, as here. `prefix_space=False` reproduces the
stacks that lose it (docs/metrics.md §2). `max_tokens` is where bert-score truncates (the tokenizer's
model_max_length, 512 for distilroberta-base: <s>, the first max_tokens - 2 text ids, </s>).
`get_model` keeps only the first `layer` transformer layers and takes their output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from rexrank.models import ModelUnavailable, ResolvedModel
from rexrank.models.runtime import Runtime, run_batches

MAX_TOKENS = 512  # distilroberta-base's model_max_length, which bert-score truncates to


def _check_folder(folder: Path, what: str) -> None:
    if not folder.is_dir():
        raise ModelUnavailable(f"{what}: {folder} must be a model folder (config.json, weights, tokenizer)")
    if not (folder / "config.json").is_file():
        raise ModelUnavailable(f"{what}: {folder / 'config.json'} is missing")
    if not ((folder / "tokenizer.json").is_file() or
            ((folder / "vocab.json").is_file() and (folder / "merges.txt").is_file())):
        raise ModelUnavailable(f"{what}: {folder} has no tokenizer (tokenizer.json, or vocab.json + merges.txt)")


class BertScoreEncoder:
    def __init__(self, model: ResolvedModel, layer: int = 5, runtime: Runtime | None = None,
                 prefix_space: bool = True, max_tokens: int = MAX_TOKENS):
        from transformers import AutoModel, AutoTokenizer

        _check_folder(model.path, model.spec.what)
        self.prefix_space = prefix_space
        self.tokenizer = AutoTokenizer.from_pretrained(model.path, add_prefix_space=prefix_space)
        try:
            net = AutoModel.from_pretrained(model.path, add_pooling_layer=False)  # BERTScore reads a layer
        except (OSError, ValueError, RuntimeError) as err:
            raise ModelUnavailable(f"{model.spec.what}: cannot load weights from {model.path}: {err}") from None
        if not 0 < layer <= len(net.encoder.layer):
            raise ValueError(f"layer {layer} outside 1..{len(net.encoder.layer)} for {model.path}")
        net.encoder.layer = net.encoder.layer[:layer]  # bert-score drops the layers above the one it reads
        self.runtime = runtime or Runtime()
        self.device = self.runtime.torch_device
        self.net = net.eval().to(self.device)
        if not 2 < max_tokens <= min(MAX_TOKENS, self.tokenizer.model_max_length):
            raise ValueError(f"max_tokens {max_tokens} outside 3..{min(MAX_TOKENS, self.tokenizer.model_max_length)} "
                             f"for {model.path}")
        self.max_tokens = max_tokens
        self.batch_size = self.runtime.batch_for(net.config, self.max_tokens)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        stripped = [t.strip() for t in texts]
        encoded = self.tokenizer([t or " " for t in stripped], truncation=True, max_length=self.max_tokens)
        empty = [self.tokenizer.cls_token_id, self.tokenizer.sep_token_id]
        return [ids if text else empty for text, ids in zip(stripped, encoded["input_ids"])]

    def _forward(self, batch: list[list[int]]) -> list[np.ndarray]:
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids in batch], device=self.device)
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch], device=self.device)
        with torch.inference_mode(), self.runtime.precision():
            hidden = self.net(input_ids=input_ids, attention_mask=mask).last_hidden_state.float().cpu().numpy()
        return [hidden[i, :len(ids)] for i, ids in enumerate(batch)]

    def encode(self, texts: Sequence[str], progress: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: (token ids, [tokens x hidden] float32 states of the chosen layer)."""
        ids = self.token_ids(texts)
        states = run_batches(ids, [len(i) for i in ids], self.batch_size, self._forward, "bertscore", progress)
        return [(np.asarray(i, dtype=np.int64), s) for i, s in zip(ids, states)]
