"""RadGraph v1 inference (DyGIE++), reimplemented on current transformers: report text -> `Graph`.

Loads the real archive format of `StanfordAIMI/RRG_scorers` `radgraph.tar.gz` (config.json, vocabulary/,
weights.th) and computes what radgraph 0.1.18 computes (docs/reference-notes/radgraph.md, with file:line):
words by the reference regex (the whole report one sentence; an empty report is the word "None"); each
word's wordpieces encoded on their own, [CLS] ... [SEP] in chunks of 510 pieces run as independent
segments; a word is the mean of its pieces' last-layer states (0 if it has none); every span of up to
`max_span_width` words is [h_start; h_end; width embedding]; NER is FF -> Linear with a 0 null logit
prepended, argmax, no threshold; relations come from the top ceil(n * spans_per_word) spans by their own
mention score (re-sorted by span), every ordered pair incl. i = j scored as FF([a; b; a*b]) -> Linear plus
both mention scores, 0 null prepended, argmax; a relation is kept only if both ends are NER entities.
Unlike the reference, which runs one report per forward, the encoder runs on batches of reports.
"""

from __future__ import annotations

import json
import math
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from rexrank.models import ModelSpec, ModelUnavailable, ResolvedModel, _from_hub
from rexrank.models.runtime import pick_device, run_batches
from rexrank.scorers.radgraph import Entity, Graph, tokenize_report

PIECES_PER_SEGMENT = 510
PAIR_CELLS = 1 << 26  # floats of pair representations held at once (256 MB)
BERT = "_embedder.token_embedder_bert._matched_embedder.transformer_model."
NER = "_ner._ner_scorers.radgraph__ner_labels."
PRUNER = "_relation._mention_pruners.radgraph__relation_labels._scorer."
PAIRS = "_relation._relation_feedforwards.radgraph__relation_labels._linear_layers."
RELATION = "_relation._relation_scorers.radgraph__relation_labels."
WIDTH = "_endpoint_span_extractor._span_width_embedding.weight"


def archive_folder(model: ResolvedModel) -> Path:
    """The extracted archive: the folder itself, or `radgraph.tar.gz` unpacked once beside the cache."""
    if model.path.is_dir() and (model.path / "config.json").is_file():
        return model.path
    archive = model.file("radgraph.tar.gz")
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = base / "rexrank" / "radgraph" / model.identity.replace("/", "--").replace(":", "-")
    if not (target / "config.json").is_file():
        target.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(target, filter="data")  # refuses absolute paths and "..": no escape
        except (tarfile.TarError, OSError) as err:
            raise ModelUnavailable(f"RadGraph archive {archive} cannot be unpacked: {err}") from None
    found = sorted(target.rglob("config.json"))
    if not found:
        raise ModelUnavailable(f"RadGraph archive {archive} has no config.json")
    return found[0].parent


def _read_labels(path: Path) -> list[str]:
    """An allennlp vocabulary file: one label per line, a final newline optional; the NER file's first line
    is the empty null label."""
    if not path.is_file():
        raise ModelUnavailable(f"RadGraph model: {path} is missing")
    lines = re.split(r"\n|\r\n", path.read_text(encoding="utf-8"))
    return lines[:-1] if lines and lines[-1] == "" else lines


class RadGraphModel:
    def __init__(self, model: ResolvedModel, device: str | None = None, batch_size: int = 8):
        from transformers import AutoConfig, AutoTokenizer, BertModel

        folder = archive_folder(model)
        config = json.loads((folder / "config.json").read_text())
        settings = config["model"]
        self.max_span_width = int(config["dataset_reader"].get("max_span_width", settings.get("max_span_width", 8)))
        self.spans_per_word = float(settings["modules"]["relation"]["spans_per_word"])
        self.layers = int(settings["feedforward_params"]["num_layers"])
        self.ner_labels = _read_labels(folder / "vocabulary" / "radgraph__ner_labels.txt")
        self.relation_labels = _read_labels(folder / "vocabulary" / "radgraph__relation_labels.txt")
        encoder = self._encoder_folder(settings["embedder"]["token_embedders"]["bert"]["model_name"])
        self.tokenizer = AutoTokenizer.from_pretrained(encoder)
        try:
            state = torch.load(folder / "weights.th", map_location="cpu", weights_only=True)
        except Exception as err:  # a truncated or foreign file
            raise ModelUnavailable(f"RadGraph weights {folder / 'weights.th'} cannot be read: "
                                   f"{type(err).__name__}: {str(err)[:200]}") from None
        bert = BertModel(AutoConfig.from_pretrained(encoder))
        missing, _ = bert.load_state_dict({k[len(BERT):]: v for k, v in state.items() if k.startswith(BERT)},
                                          strict=False)
        needed = [WIDTH, f"{NER}1._module.weight", f"{PRUNER}1._module.weight", f"{RELATION}weight"]
        absent = sorted(set(missing) - {"embeddings.position_ids"}) + [k for k in needed if k not in state]
        if absent:
            raise ModelUnavailable(f"RadGraph weights {folder / 'weights.th'} lack {absent[:5]}")
        self.device = pick_device(device)
        self.bert = bert.eval().to(self.device)
        self.heads = {k: v.to(self.device) for k, v in state.items() if not k.startswith(BERT)}
        self.batch_size = batch_size
        self.model = model

    @staticmethod
    def _encoder_folder(name: str) -> Path:
        if Path(name).is_dir():
            return Path(name)
        spec = ModelSpec("RADGRAPH_ENCODER", name, "main", ("config.json", "vocab.txt", "tokenizer.json",
                                                            "tokenizer_config.json"),
                         f"RadGraph's encoder configuration and vocabulary ({name})")
        return _from_hub(spec, local_only=False).path

    def _pieces(self, words: list[str]) -> tuple[list[int], list[tuple[int, int] | None]]:
        ids: list[int] = []
        offsets: list[tuple[int, int] | None] = []
        encoded = self.tokenizer(words, add_special_tokens=False)["input_ids"] if words else []
        for pieces in encoded:
            offsets.append((len(ids), len(ids) + len(pieces)) if pieces else None)
            ids += pieces
        return ids, offsets

    def _segments(self, ids: list[int]) -> list[list[int]]:
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        return [[cls, *ids[i:i + PIECES_PER_SEGMENT], sep] for i in range(0, len(ids), PIECES_PER_SEGMENT)]

    def _forward(self, reports: list[tuple[list[str], list[int], list]]) -> list[Graph]:
        segments = [self._segments(ids) for _, ids, _ in reports]
        flat = [s for group in segments for s in group]
        states = []
        if flat:
            width = max(map(len, flat))
            input_ids = torch.tensor([s + [0] * (width - len(s)) for s in flat], device=self.device)
            mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in flat], device=self.device)
            with torch.inference_mode():
                out = self.bert(input_ids=input_ids, attention_mask=mask).last_hidden_state
            states = [out[i, 1:len(s) - 1] for i, s in enumerate(flat)]
        graphs, at = [], 0
        for (words, _, offsets), group in zip(reports, segments):
            pieces = torch.cat(states[at:at + len(group)]) if group else None
            at += len(group)
            graphs.append(self._graph(words, offsets, pieces))
        return graphs

    def _ff(self, prefix: str, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.layers):  # ReLU after every layer, the last one included (allennlp FeedForward)
            x = F.relu(F.linear(x, self.heads[f"{prefix}{i}.weight"], self.heads[f"{prefix}{i}.bias"]))
        return x

    def _scorer(self, prefix: str, x: torch.Tensor) -> torch.Tensor:
        hidden = self._ff(f"{prefix}0._module._linear_layers.", x)
        return F.linear(hidden, self.heads[f"{prefix}1._module.weight"], self.heads[f"{prefix}1._module.bias"])

    @torch.inference_mode()
    def _graph(self, words: list[str], offsets: list, pieces: torch.Tensor | None) -> Graph:
        n = len(words)
        h = self._words(offsets, pieces, self.bert.config.hidden_size)
        spans = [(s, e) for s in range(n) for e in range(s, min(s + self.max_span_width, n))]
        starts = torch.tensor([s for s, _ in spans], device=self.device)
        ends = torch.tensor([e for _, e in spans], device=self.device)
        g = torch.cat([h[starts], h[ends], self.heads[WIDTH][ends - starts]], dim=-1)

        ner = self._scorer(NER, g)
        ner = torch.cat([torch.zeros(len(spans), 1, device=self.device), ner], dim=-1).argmax(-1).tolist()
        entities = [(spans[i], self.ner_labels[label]) for i, label in enumerate(ner) if label != 0]

        mention = self._scorer(PRUNER, g)[:, 0]
        k = max(1, math.ceil(float(torch.tensor(n, dtype=torch.float32) * self.spans_per_word)))
        top = torch.sort(mention.topk(min(k, len(spans))).indices).values
        a, m = g[top], mention[top]
        size = len(top)
        # Every ordered pair [a_i; a_j; a_i * a_j]: K^2 rows, so a long report is done in blocks of source rows
        # (a 2,000-word report has K = 1,000: 18 GB at once).
        block = max(1, PAIR_CELLS // max(1, size * 3 * a.shape[-1]))
        scores = torch.cat([
            F.linear(self._ff(PAIRS, torch.cat([a[i:i + block, None].expand(-1, size, -1),
                                                a[None].expand(len(a[i:i + block]), size, -1),
                                                a[i:i + block, None] * a[None]], dim=-1).reshape(-1, 3 * a.shape[-1])),
                     self.heads[f"{RELATION}weight"], self.heads[f"{RELATION}bias"])
            for i in range(0, size, block)])
        scores = scores.view(size, size, -1) + (m[:, None] + m[None, :])[..., None]
        labels = torch.cat([torch.zeros(size, size, 1, device=self.device), scores], dim=-1).argmax(-1).tolist()

        index = {span: i for i, (span, _) in enumerate(entities)}
        top_spans = [spans[i] for i in top.tolist()]
        relations = tuple((index[top_spans[i]], index[top_spans[j]], self.relation_labels[label - 1])
                          for i in range(size) for j in range(size) if (label := labels[i][j]) > 0
                          and top_spans[i] in index and top_spans[j] in index)
        # row-major over spans sorted by position: per source entity, targets in span order, as the reference
        return Graph(tuple(Entity(" ".join(words[s:e + 1]), label, s, e) for (s, e), label in entities), relations)

    def _words(self, offsets: list, pieces: torch.Tensor | None, hidden: int) -> torch.Tensor:
        """Each word the mean of its pieces' states; a word without pieces is 0."""
        zero = torch.zeros(hidden, device=self.device)
        return torch.stack([pieces[o[0]:o[1]].mean(0) if o is not None else zero for o in offsets])

    def graphs(self, reports: Sequence[str], progress: bool = True) -> list[Graph]:
        prepared = []
        for report in reports:
            words = tokenize_report(report) or ["None"]  # the reference turns an empty report into "None"
            ids, offsets = self._pieces(words)
            prepared.append((words, ids, offsets))
        return run_batches(prepared, [len(ids) for _, ids, _ in prepared], self.batch_size, self._forward,
                           "radgraph", progress)
