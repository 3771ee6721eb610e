"""CheXbert inference: text -> ([CLS] embedding, 14 labels), as CXR-Report-Metric and CheXbert compute them.

Sources: stanfordmlgroup/CheXbert `src/models/bert_labeler.py` (bert-base-uncased + 13 four-class heads
and one two-class head on the last-layer [CLS] state), CXR-Report-Metric `CheXbert/src/encode.py` and
`models/bert_encoder.py` (the embedding is that [CLS] state, before dropout, no heads), `bert_tokenizer.py`
(strip, newline to space, collapse whitespace, strip; WordPiece; [CLS] ids [SEP], over 512 ids the first 511
then [SEP]; an empty report is [CLS][SEP]). Head classes: 0 blank, 1 positive, 2 negative, 3 uncertain;
the No Finding head has only blank and positive.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from rexrank.models import ModelUnavailable, ResolvedModel
from rexrank.models.runtime import Runtime, run_batches

MAX_TOKENS = 512
# In the checkpoint but unused: the pooler (CheXbert reads the [CLS] state) and a buffer transformers rebuilds.
UNUSED_KEYS = re.compile(r"^bert\.(pooler\.|embeddings\.position_ids$)")


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().replace("\n", " ")).strip()


class CheXbertNet(nn.Module):
    def __init__(self, config):
        from transformers import BertModel

        super().__init__()
        self.bert = BertModel(config, add_pooling_layer=False)
        hidden = config.hidden_size
        self.linear_heads = nn.ModuleList([nn.Linear(hidden, 4) for _ in range(13)] + [nn.Linear(hidden, 2)])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[CLS] states [B, hidden] and head classes [B, 14] (argmax of each head, in CONDITIONS order)."""
        cls = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        labels = torch.stack([head(cls).argmax(dim=-1) for head in self.linear_heads], dim=-1)
        return cls, labels


def load_state(checkpoint: Path) -> dict[str, torch.Tensor]:
    """The model weights of a CheXbert checkpoint (`model_state_dict`, DataParallel `module.` prefix removed)."""
    try:
        data = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for a truncated or foreign file
        raise ModelUnavailable(f"CheXbert checkpoint {checkpoint} cannot be read (truncated or not a PyTorch "
                               f"checkpoint?): {type(err).__name__}: {str(err)[:200]}") from None
    state = data.get("model_state_dict", data) if isinstance(data, dict) else None
    if not isinstance(state, dict):
        raise ModelUnavailable(f"CheXbert checkpoint {checkpoint} holds no state dict")
    return {key.removeprefix("module."): value for key, value in state.items()}


class CheXbert:
    def __init__(self, checkpoint: ResolvedModel, base: ResolvedModel, runtime: Runtime | None = None):
        from transformers import AutoTokenizer, BertConfig

        folder = base.path
        if not (folder / "vocab.txt").is_file() and not (folder / "tokenizer.json").is_file():
            raise ModelUnavailable(f"{base.spec.what}: {folder} has no tokenizer (vocab.txt or tokenizer.json)")
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        net = CheXbertNet(BertConfig.from_pretrained(folder))
        path = checkpoint.file("chexbert.pth")
        state = {k: v for k, v in load_state(path).items() if not UNUSED_KEYS.match(k)}
        missing, unexpected = net.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ModelUnavailable(f"CheXbert checkpoint {path} does not fit the model: "
                                   f"missing {sorted(missing)[:5]}{'...' if len(missing) > 5 else ''}, "
                                   f"unexpected {sorted(unexpected)[:5]}{'...' if len(unexpected) > 5 else ''}")
        self.runtime = runtime or Runtime()
        self.device = self.runtime.torch_device
        self.net = net.eval().to(self.device)
        self.batch_size = self.runtime.batch_for(net.bert.config, MAX_TOKENS)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer([clean(t) for t in texts], truncation=True, max_length=MAX_TOKENS)["input_ids"]

    def _forward(self, batch: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
        width = max(len(ids) for ids in batch)
        input_ids = torch.tensor([ids + [0] * (width - len(ids)) for ids in batch], device=self.device)
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch], device=self.device)
        with torch.inference_mode(), self.runtime.precision():
            cls, labels = self.net(input_ids, mask)
        cls, labels = cls.float().cpu().numpy(), labels.cpu().numpy().astype(np.int8)
        return [(cls[i], labels[i]) for i in range(len(batch))]

    def encode(self, texts: Sequence[str], progress: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: ([CLS] embedding float32, 14 head classes int8)."""
        ids = self.token_ids(texts)
        return run_batches(ids, [len(i) for i in ids], self.batch_size, self._forward, "chexbert", progress)
