"""RaTEScore inference, as `ratescore` 0.6.0 runs it on transformers 4 (notes: docs/reference-notes/ratescore.md).

Sentences (rexrank.ratescore_sentences, the medspacy/PyRuSH split) go through the RaTE-NER DeBERTa; each sentence's
argmax IOB tags become (entity text, type) by the reference's merge rule; entity texts go through BioLORD, whose
[CLS] last hidden state is the entity's vector.

Both tokenizers are read from the checkpoint's own tokenizer.json with the `tokenizers` library, as
transformers 4 did: transformers 5 rebuilds the DeBERTa-v2 normalizer and drops the SentencePiece NFKC
charsmap, which changes the tokens of text with ligatures, full-width forms or non-breaking spaces.
Unlike the reference, the distinct sentences of all reports are each tagged once, in length-sorted batches
(the reference runs one sentence per forward pass); padding is masked, so logits agree to float rounding and
the tags are the same. Likewise each distinct entity text is encoded once, in length-sorted batches; the
reference encodes a report's entities together, which gives vectors that differ in the last float32 bits
(`EntityEncoder.embed` reproduces those bits, for the pairs where they decide a best match: see
`rexrank.scorers.ratescore`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from rexrank.models import ModelUnavailable, ResolvedModel
from rexrank.models.runtime import Runtime, run_batches

NER_MAX_TOKENS = 512  # run_ner's max_length
ENTITY_MAX_TOKENS = 30  # process_embedding's max_length
TYPES = ("ABNORMALITY", "NON-ABNORMALITY", "DISEASE", "NON-DISEASE", "ANATOMY")
Entity = tuple[str, str]  # (text, type)


def merge_entities(tokens: Sequence[str], tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first, last, type) token spans from IOB tags, by ratescore 0.6.0 `utils.post_process`'s rule.

    Each tag is read with the next position's tag (for the last real token, the model's tag at [SEP]).
    A span takes its B- tag's type; B-x I-y is one span of type x; I- tags with no B- before them are dropped;
    an entity still open at the end is kept up to the last real token only if no earlier span of the
    sentence was closed by a B-/I- followed by B- (the reference's `end is None` test).
    """
    spans: list[tuple[int, int, str]] = []
    start = end = kind = None
    for i, tag in enumerate(tags[:len(tokens)]):
        if tokens[i] in ("[CLS]", "[SEP]") or tag == "O" or i >= len(tags) - 1:
            continue
        after = tags[i + 1]
        if tag.startswith("B-"):
            if after.startswith("I-"):
                start, kind = i, tag[2:]
            elif after.startswith("B-"):
                spans.append((i, i, tag[2:]))
                start, end, kind = i, i, tag[2:]
            elif after.startswith("O"):
                spans.append((i, i, tag[2:]))
                start = end = kind = None
        elif tag.startswith("I-") and (after.startswith("B-") or after.startswith("O")):
            end = i
            if start is not None:
                spans.append((start, i, kind))
            start, kind = (i, tag[2:]) if after.startswith("B-") else (None, None)
            if after.startswith("O"):
                end = None
    if start is not None and end is None:
        spans.append((start, len(tokens) - 2, kind))
    return spans


def _tokenizer(folder: Path, what: str, max_length: int):
    """The checkpoint's tokenizer as transformers 4's fast tokenizer used it: truncation, no padding. From its
    tokenizer.json where it has one (RaTE-NER); else built from its vocabulary and tokenizer_config.json as
    transformers' AutoTokenizer builds it (BioLORD-2023-C ships vocab.txt only)."""
    from tokenizers import Tokenizer

    if (folder / "tokenizer.json").is_file():
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    else:
        from transformers import AutoTokenizer

        try:
            built = AutoTokenizer.from_pretrained(folder)
        except (OSError, ValueError, TypeError) as err:
            raise ModelUnavailable(f"{what}: no tokenizer.json in {folder}, and none can be built from its files "
                                   f"({type(err).__name__}: {str(err)[:200]})") from None
        tokenizer = Tokenizer.from_str(built.backend_tokenizer.to_str())  # a copy: its settings are ours to change
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


def _special(folder: Path, name: str, default: str) -> str:
    import json

    path = folder / "special_tokens_map.json"
    value = json.loads(path.read_text()).get(name, default) if path.is_file() else default
    return value["content"] if isinstance(value, dict) else value


def _load(auto_class, model: ResolvedModel):
    if not model.path.is_dir() or not (model.path / "config.json").is_file():
        raise ModelUnavailable(f"{model.spec.what}: {model.path} must be a model folder with config.json")
    try:
        return auto_class.from_pretrained(model.path, dtype=torch.float32).eval()
    except (OSError, ValueError, RuntimeError) as err:
        raise ModelUnavailable(f"{model.spec.what}: cannot load weights from {model.path}: {err}") from None


def _padded(batch: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids in batch)
    ids = torch.tensor([x + [pad] * (width - len(x)) for x in batch], device=device)
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in batch], device=device)
    return ids, mask


class RateNer:
    """Angelakeke/RaTE-NER-Deberta: sentence -> [(entity text, type), ...]."""

    def __init__(self, model: ResolvedModel, runtime: Runtime | None = None):
        from transformers import AutoModelForTokenClassification

        self.tokenizer = _tokenizer(model.path, model.spec.what, NER_MAX_TOKENS)
        self.pad = self.tokenizer.token_to_id(_special(model.path, "pad_token", "[PAD]"))
        net = _load(AutoModelForTokenClassification, model)
        self.tags = [net.config.id2label[i] for i in range(net.config.num_labels)]
        unknown = {t[2:] for t in self.tags if t != "O"} - set(TYPES)
        if unknown:
            raise ModelUnavailable(f"{model.spec.what}: labels {sorted(unknown)} are not RaTEScore's types {TYPES}")
        self.runtime = runtime or Runtime()
        self.device = self.runtime.torch_device
        self.net = net.to(self.device)
        self.batch_size = self.runtime.batch_for(net.config, NER_MAX_TOKENS)

    def _forward(self, batch: list[list[int]]) -> list[list[int]]:
        ids, mask = _padded(batch, self.pad, self.device)
        with torch.inference_mode(), self.runtime.precision():
            best = self.net(input_ids=ids, attention_mask=mask).logits.argmax(dim=2).cpu().tolist()
        return [row[:len(x)] for row, x in zip(best, batch)]

    def entities(self, sentences: Sequence[str], progress: bool = True) -> list[list[Entity]]:
        encoded = [e.ids for e in self.tokenizer.encode_batch(list(sentences))]
        tags = run_batches(encoded, [len(x) for x in encoded], self.batch_size, self._forward, "ratescore ner",
                           progress)
        out = []
        for ids, labels in zip(encoded, tags):
            # The reference reads the tokens back up to the count of non-[PAD] ids (a literal "[PAD]" in the
            # text shortens them) and decodes each span with the Metaspace decoder, not from character offsets.
            tokens = [self.tokenizer.id_to_token(i) for i in ids[:sum(i != self.pad for i in ids)]]
            names = [self.tags[t] for t in labels]
            out.append([(self.tokenizer.decoder.decode(tokens[a:b + 1]), kind)
                        for a, b, kind in merge_entities(tokens, names)])
        return out


class EntityEncoder:
    """FremyCompany/BioLORD-2023-C: entity text -> [CLS] last hidden state (float32)."""

    def __init__(self, model: ResolvedModel, runtime: Runtime | None = None):
        from transformers import AutoModel

        self.tokenizer = _tokenizer(model.path, model.spec.what, ENTITY_MAX_TOKENS)
        self.pad = self.tokenizer.token_to_id(_special(model.path, "pad_token", "<pad>"))
        self.runtime = runtime or Runtime()
        self.device = self.runtime.torch_device
        self.net = _load(AutoModel, model).to(self.device)
        self.batch_size = self.runtime.batch_for(self.net.config, ENTITY_MAX_TOKENS)

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        ids, mask = _padded(batch, self.pad, self.device)
        with torch.inference_mode(), self.runtime.precision():
            return self.net(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0].float().cpu().numpy()

    def vectors(self, texts: Sequence[str], progress: bool = True) -> dict[str, np.ndarray]:
        """Each distinct entity text's vector, in length-sorted batches."""
        distinct = list(dict.fromkeys(texts))
        encoded = [e.ids for e in self.tokenizer.encode_batch(distinct)]
        found = run_batches(encoded, [len(x) for x in encoded], self.batch_size, lambda b: list(self._forward(b)),
                            "ratescore entities", progress)
        return dict(zip(distinct, found))

    def embed(self, entities: Sequence[str]) -> np.ndarray:
        """One report's entity texts in one padded forward pass, as the reference runs them: bit for bit its
        vectors (a row's bits depend on the batch it ran in)."""
        if not entities:
            return np.zeros((0, self.net.config.hidden_size), dtype=np.float32)
        return self._forward([e.ids for e in self.tokenizer.encode_batch(list(entities))])


class RaTEModels:
    """Reports -> per report (entity texts, entity types, [n, hidden] vectors), each distinct sentence and
    each distinct entity text computed once."""

    def __init__(self, ner: ResolvedModel, encoder: ResolvedModel, runtime: Runtime | None = None):
        self.ner = RateNer(ner, runtime)
        self.encoder = EntityEncoder(encoder, runtime)

    def entities(self, reports: Sequence[str], progress: bool = True) -> list[list[Entity]]:
        from rexrank.ratescore_sentences import ratescore_sentences

        sentences = [ratescore_sentences(r) for r in reports]
        distinct = list(dict.fromkeys(s for report in sentences for s in report))
        found = dict(zip(distinct, self.ner.entities(distinct, progress)))
        return [[e for s in report for e in found[s]] for report in sentences]

    def features(self, reports: Sequence[str], progress: bool = True) -> list[tuple[np.ndarray, ...]]:
        entities = self.entities(reports, progress)
        vectors = self.encoder.vectors([t for report in entities for t, _ in report], progress)
        width = self.encoder.net.config.hidden_size
        return [(np.array([t for t, _ in report], dtype=str), np.array([k for _, k in report], dtype=str),
                 np.array([vectors[t] for t, _ in report], dtype=np.float32).reshape(len(report), width))
                for report in entities]
