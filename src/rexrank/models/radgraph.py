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
Unlike the reference, which runs one report per forward, the encoder and every head run on batches of
reports, and the first (linear) layer of each head is applied to each word or top span once and summed per
span or pair instead of to every concatenation: the same sums in another order, so the scores differ from
the reference's in the last bits only, as batching alone already makes them (MKL's sums depend on the
number of rows), and the graphs are the same (tests/test_reference_parity.py).
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from rexrank.models import MODELS, ModelUnavailable, ResolvedModel, override_for, resolve
from rexrank.models.radgraph_graphs import Entity, Graph, tokenize_report
from rexrank.models.runtime import Runtime, run_batches

PIECES_PER_SEGMENT = 510
PAIR_CELLS = 1 << 26  # floats of pair products g_i * g_j held at once (256 MB)
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
    def __init__(self, model: ResolvedModel, runtime: Runtime | None = None):
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
        self.runtime = runtime or Runtime()
        self.device = self.runtime.torch_device
        self.bert = bert.eval().to(self.device)
        self.heads = {k: v.to(self.device) for k, v in state.items() if not k.startswith(BERT)}
        self.batch_size = self.runtime.batch_for(bert.config, PIECES_PER_SEGMENT + 2)
        self.model = model

    @staticmethod
    def _encoder_folder(name: str) -> Path:
        """The encoder the archive's config names (its `model_name`): the registry's RADGRAPH_ENCODER for its repo id,
        old or new, resolved like every model (override, cache, the Hub at its pin); a local folder as it is."""
        spec = MODELS["RADGRAPH_ENCODER"]
        if override_for(spec.key) or name in (spec.repo_id, *spec.names):
            return resolve(spec.key).path
        if Path(name).is_dir():
            return Path(name)
        raise ModelUnavailable(f"the RadGraph archive names its encoder {name!r}, which rexrank does not know: set "
                               f"{spec.env}=/path/to/its/folder (config.json, vocab.txt, tokenizer_config.json)")

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
        with torch.inference_mode(), self.runtime.precision():
            return self._graphs(reports)

    def _graphs(self, reports: list[tuple[list[str], list[int], list]]) -> list[Graph]:
        """The encoder, then each head once over the spans and pairs of all the batch's reports."""
        h = self._words(reports)
        dev, sizes = h.device, torch.tensor([len(words) for words, _, _ in reports], device=h.device)
        # spans of up to max_span_width words inside a report: by start, then end, report after report
        report_of_word = torch.arange(len(reports), device=dev).repeat_interleave(sizes)
        first_word = sizes.cumsum(0) - sizes
        starts = torch.arange(len(h), device=dev)[:, None]
        ends = starts + torch.arange(self.max_span_width, device=dev)
        inside = ends < (first_word + sizes)[report_of_word][:, None]
        starts, ends = starts.expand_as(ends)[inside], ends[inside]
        report_of_span = report_of_word[starts]

        ner = self._span_scores(NER, h, starts, ends)
        ner = torch.cat([ner.new_zeros(len(ner), 1), ner], dim=-1).argmax(-1)
        mention = self._span_scores(PRUNER, h, starts, ends)[:, 0]
        # each report's own top k = ceil(n * spans_per_word) (float32, as the reference) by mention score, taken
        # on its own slice of spans (no other report's span can enter), then sorted by span
        bounds = [0, *torch.bincount(report_of_span, minlength=len(reports)).cumsum(0).tolist()]
        ks = torch.ceil(sizes.float() * self.spans_per_word).clamp(min=1).long().tolist()
        tops = [mention[lo:hi].topk(min(k, hi - lo)).indices.sort().values + lo
                for k, lo, hi in zip(ks, bounds, bounds[1:])]
        source, target, relation = self._relations(h, starts, ends, mention, tops)

        # entities numbered in span order within their report; a relation only between two entities, in
        # row-major order over the sorted top spans, as the reference
        is_entity = ner > 0
        number = is_entity.cumsum(0) - 1
        numbered = [0, *number[torch.tensor(bounds[1:], device=dev) - 1].add(1).tolist()]
        first, words = first_word.tolist(), [w for w, _, _ in reports]
        entities: list[list[Entity]] = [[] for _ in reports]
        found = is_entity.nonzero()[:, 0]
        for r, s, e, label in zip(*(x[found].tolist() for x in (report_of_span, starts, ends, ner))):
            s, e = s - first[r], e - first[r]
            entities[r].append(Entity(" ".join(words[r][s:e + 1]), self.ner_labels[label], s, e))
        relations: list[list] = [[] for _ in reports]
        kept = ((relation > 0) & is_entity[source] & is_entity[target]).nonzero()[:, 0]
        for r, i, j, label in zip(*(x[kept].tolist() for x in (report_of_span[source], number[source],
                                                                   number[target], relation))):
            relations[r].append((i - numbered[r], j - numbered[r], self.relation_labels[label - 1]))
        return [Graph(tuple(e), tuple(rel)) for e, rel in zip(entities, relations)]

    def _words(self, reports: list[tuple[list[str], list[int], list]]) -> torch.Tensor:
        """Every word of the batch, report after report: the mean of its pieces' last-layer states (summed in
        order, divided by their number), 0 if it has none. Pieces past 510 come from their own segment."""
        segments = [s for _, ids, _ in reports for s in self._segments(ids)]
        pieces = self.heads[WIDTH].new_zeros(0, self.bert.config.hidden_size)
        if segments:
            width = max(map(len, segments))
            input_ids = torch.tensor([s + [0] * (width - len(s)) for s in segments], device=self.device)
            mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in segments], device=self.device)
            out = self.bert(input_ids=input_ids, attention_mask=mask).last_hidden_state
            pieces = torch.cat([out[i, 1:len(s) - 1] for i, s in enumerate(segments)])
        counts = torch.tensor([o[1] - o[0] if o else 0 for _, _, offsets in reports for o in offsets],
                              device=self.device)
        word_of_piece = torch.arange(len(counts), device=self.device).repeat_interleave(counts)
        sums = pieces.new_zeros(len(counts), pieces.shape[-1]).index_add_(0, word_of_piece, pieces)
        return sums / counts.clamp(min=1)[:, None]

    def _ff(self, prefix: str, x: torch.Tensor, first: int = 0) -> torch.Tensor:
        for i in range(first, self.layers):  # ReLU after every layer, the last one included (allennlp FeedForward)
            x = F.relu(F.linear(x, self.heads[f"{prefix}{i}.weight"], self.heads[f"{prefix}{i}.bias"]))
        return x

    def _span_scores(self, prefix: str, h: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        """The scorer `prefix` on every span [h_start; h_end; width embedding]. Its first layer is linear: applied
        to each word and width once and summed per span, it costs an eighth of the products."""
        layers, d = f"{prefix}0._module._linear_layers.", h.shape[-1]
        weight = self.heads[f"{layers}0.weight"]
        by_start, by_end = F.linear(h, weight[:, :d]), F.linear(h, weight[:, d:2 * d])
        by_width = F.linear(self.heads[WIDTH], weight[:, 2 * d:], self.heads[f"{layers}0.bias"])
        hidden = self._ff(layers, (by_start[starts] + by_end[ends]).add_(by_width[ends - starts]).relu_(), first=1)
        return F.linear(hidden, self.heads[f"{prefix}1._module.weight"], self.heads[f"{prefix}1._module.bias"])

    def _relations(self, h: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, mention: torch.Tensor,
                   tops: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every ordered pair (i, j) of each report's top spans, row-major, i = j included: source and target
        span indices and the argmax label (0 = none) of FF([g_i; g_j; g_i * g_j]) -> Linear, plus m_i + m_j."""
        weight, scores = self.heads[f"{PAIRS}0.weight"], []
        for top in tops:  # a report's pairs broadcast from its own top spans: no gathered copies of g per pair
            g = torch.cat([h[starts[top]], h[ends[top]], self.heads[WIDTH][ends[top] - starts[top]]], dim=-1)
            d, k = g.shape[-1], len(top)
            # the FF's first layer is linear: its g_i and g_j parts once per span, only g_i * g_j per pair, in
            # blocks of source rows of at most PAIR_CELLS floats (a 2,000-word report has 1,000 top spans)
            by_source = F.linear(g, weight[:, :d], self.heads[f"{PAIRS}0.bias"])[:, None]
            by_target = F.linear(g, weight[:, d:2 * d])
            rows = max(1, PAIR_CELLS // (k * d))
            for i in range(0, k, rows):
                layer = F.linear(g[i:i + rows, None] * g, weight[:, 2 * d:]).add_(by_source[i:i + rows]).add_(by_target)
                hidden = self._ff(PAIRS, layer.relu_(), first=1)
                scores.append(F.linear(hidden, self.heads[f"{RELATION}weight"], self.heads[f"{RELATION}bias"]))
        source = torch.cat([top.repeat_interleave(len(top)) for top in tops])
        target = torch.cat([top.repeat(len(top)) for top in tops])
        scores = torch.cat([s.flatten(0, 1) for s in scores]) + (mention[source] + mention[target])[:, None]
        return source, target, torch.cat([scores.new_zeros(len(scores), 1), scores], dim=-1).argmax(-1)

    def graphs(self, reports: Sequence[str], progress: bool = True) -> list[Graph]:
        prepared = []
        for report in reports:
            words = tokenize_report(report) or ["None"]  # the reference turns an empty report into "None"
            ids, offsets = self._pieces(words)
            prepared.append((words, ids, offsets))
        return run_batches(prepared, [len(ids) for _, ids, _ in prepared], self.batch_size, self._forward,
                           "radgraph", progress)
