"""BERTScore as ReXrank computes it (docs/metrics.md §2).

Source: rajpurkarlab/CXR-Report-Metric `add_bertscore_col` (runs of spaces collapsed, then bert-score
0.3.11 `BERTScorer(model_type="distilroberta-base", rescale_with_baseline=True, idf=False)`), and
bert-score's `greedy_cos_idf`: cosine similarity of every candidate token with every reference token
(special tokens included as match targets), each token's best match weighted by its idf share (special
tokens weigh 0; without idf every other token weighs 1), F1 of P and R; a text with no token besides
<s></s> sets P and R to 0 and F to 0; F is then rescaled with the layer's baseline, (F - b) / (1 - b).
Similarities are computed in float64 from the float32 states (the reference's float32 sums differ by
< 2e-7 in raw F); the rescale is float32, as the reference applies it.

The stack's choices that move the number, each an option and each in the signature (docs/metrics.md §2 says which
the published figures were made with, and why the defaults are these): the leading space (`prefix_space`, signed
`space:lead|none`), idf (`idf`, `idf:no|refs`), the special tokens (`specials`: "weight0" as bert-score, match
targets that weigh 0, or "drop", not matched at all, `specials:w0|drop`), truncation (`max_tokens`, `trunc:512`)
and the baseline (`baseline`: bert-score's F for the layer, another b, or None for raw F; `rescale:F:<b>|no`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from rexrank.models import models_extra, resolve
from rexrank.scorers import published as record
from rexrank.scorers.base import Scorer
from rexrank.signature import Signature

MODEL = "distilroberta-base"  # CXR-Report-Metric's model_type; the weights are rexrank.models' BERTSCORE
LAYER = 5  # CXR-Report-Metric's: the hidden states BERTScore reads
# bert-score's `rescale_baseline/en/distilroberta-base.tsv`, (model, layer) -> its row's P, R, F. The file has one
# version: git blob 4213b57 from its first commit (7aeb635, 2020-01-10) to bert-score's head, the same bytes in the
# 0.3.11 and 0.3.13 wheels.
BASELINES = {
    (MODEL, 0): {"P": 0.42608285, "R": 0.4272089, "F": 0.42462298},
    (MODEL, 1): {"P": 0.7367886, "R": 0.7370362, "F": 0.736573},
    (MODEL, 2): {"P": 0.79922664, "R": 0.799593, "F": 0.7991632},
    (MODEL, 3): {"P": 0.8329021, "R": 0.8333321, "F": 0.83291864},
    (MODEL, 4): {"P": 0.8442, "R": 0.84462386, "F": 0.84425896},
    (MODEL, 5): {"P": 0.84732, "R": 0.84759504, "F": 0.8473319},
    (MODEL, 6): {"P": 0.89334005, "R": 0.8935088, "F": 0.8933471},
}
BASELINE = BASELINES[(MODEL, LAYER)]
MAX_TOKENS = 512  # distilroberta-base's model_max_length, where bert-score truncates
SPECIALS = {"weight0": "w0", "drop": "drop"}  # option -> signature value
# CXR-Report-Metric's `add_bertscore_col` on its pinned stack (bert-score 0.3.11, transformers 3.0.1), as signed:
# how ReXrank's figures were made, a fact apart from the options (another layer here is a number made otherwise).
PUBLISHED = {"layer": "5", "idf": "no", "space": "lead", "trunc": "512", "specials": "w0",
             "rescale": f"F:{BASELINES[(MODEL, 5)]['F']}"}
_DEPARTS = {
    "idf": {"refs": "with idf weights from the references, CXR-Report-Metric without (USE_IDF = False)"},
    "space": {"none": "tokenised without RoBERTa's leading space, CXR-Report-Metric's pinned stack with it"},
    "specials": {"drop": "not matching <s> and </s>, bert-score matching them at weight 0"},
}


def stack_departures(settings: Mapping[str, str], against: Mapping[str, str | None] = PUBLISHED) -> list[str]:
    """How a BERTScore signature's settings depart from CXR-Report-Metric's code on its pinned stack (`against`: a
    variant's, None where nothing is published), one phrase each (for `rexrank.official.departures`). A setting the
    signature lacks is read as that stack's: it was signed before it became an option, and only that stack's value
    existed."""
    out = []
    for key, published in against.items():
        made = settings.get(key, published)
        if published is None or made == published:
            continue
        if made in _DEPARTS.get(key, {}):
            out.append(f"bertscore {_DEPARTS[key][made]}")
        elif key == "rescale":
            out.append(f"bertscore {'not rescaled' if made == 'no' else f'rescaled with {made}'}, the published "
                       f"rescaled with {published}")
        elif key == "trunc":
            out.append(f"bertscore truncated at {made} tokens, bert-score at {published}")
        else:
            out.append(f"bertscore {key} {made}, the published {published}")
    return out


def clean(text: str) -> str:
    """CXR-Report-Metric collapses runs of spaces; bert-score strips."""
    return re.sub(r" +", " ", text)


def idf_weights(reference_ids: Sequence[np.ndarray]) -> defaultdict[int, float]:
    """bert-score `get_idf_dict` over the reference list (duplicates count): log((N+1)/(df+1)), unseen log(N+1).

    <s> and </s> occur in every reference, so their weight is log(1) = 0, as without idf.
    """
    counts = Counter(token for ids in reference_ids for token in set(ids.tolist()))
    n = len(reference_ids)
    return defaultdict(lambda: math.log(n + 1), {t: math.log((n + 1) / (df + 1)) for t, df in counts.items()})


def _weights(ids: np.ndarray, idf: dict[int, float] | None) -> np.ndarray:
    if idf is None:  # every token weighs 1 but <s> and </s>, which are always the first and the last
        w = np.ones(len(ids))
        w[[0, -1]] = 0
    else:
        w = np.array([idf[t] for t in ids.tolist()])
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / w.sum()


def _inner_weights(ids: np.ndarray, idf: dict[int, float] | None) -> np.ndarray:
    """Weights of the tokens between <s> and </s> (their idf, or 1 each), normalised over them."""
    w = np.ones(len(ids)) if idf is None else np.array([idf[t] for t in ids.tolist()])
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / w.sum()


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def pair_scores(candidate: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray],
                idf: dict[int, float] | None = None, specials: str = "weight0") -> tuple[float, float, float]:
    """Raw (P, R, F) of one pair from (ids, states) features. `specials="drop"`: <s> and </s> (always the first and
    the last) are no match targets either, as if bert-score's mask left them out."""
    (c_ids, c_emb), (r_ids, r_emb) = candidate, reference
    if len(c_ids) == 2 or len(r_ids) == 2:  # only <s></s>: bert-score sets P and R to 0, F (NaN) to 0
        return 0.0, 0.0, 0.0
    if specials == "drop":
        (c_ids, c_emb), (r_ids, r_emb) = (c_ids[1:-1], c_emb[1:-1]), (r_ids[1:-1], r_emb[1:-1])
        c_weights, r_weights = _inner_weights(c_ids, idf), _inner_weights(r_ids, idf)
    else:
        c_weights, r_weights = _weights(c_ids, idf), _weights(r_ids, idf)
    sim = _unit(c_emb.astype(np.float64)) @ _unit(r_emb.astype(np.float64)).T  # specials too, unless dropped
    with np.errstate(invalid="ignore"):
        p = (sim.max(axis=1) * c_weights).sum()
        r = (sim.max(axis=0) * r_weights).sum()
        f = 2 * p * r / (p + r)
    return float(p), float(r), 0.0 if math.isnan(f) else float(f)


def rescale(value: float, baseline: float) -> float:
    """(x - b) / (1 - b) in float32, as bert-score applies its baseline."""
    b = np.float32(baseline)
    return float((np.float32(value) - b) / (np.float32(1) - b))


class BertScore(Scorer):
    name = "bertscore"
    models = ("BERTSCORE",)  # the weights it resolves (rexrank.models.registry)
    title = "BertScore"
    version = "1"
    published = PUBLISHED
    board, demo = 2, 0.45  # the board's second column by default; the demo's value at quality 1
    option_texts = {
        "layer": "the encoder's hidden layer whose states are matched",
        "idf": "weight tokens by idf over the references (not ReXrank's setting)",
        "prefix_space": "RoBERTa's leading space, as CXR-Report-Metric's pinned stack adds it",
        "specials": "\"weight0\" (<s> and </s> are match targets of weight 0, bert-score's) or \"drop\"",
        "max_tokens": "truncation, 3 to 512 tokens",
        "baseline": "b of the rescale (F - b) / (1 - b); None gives the raw F",
    }
    # No bounds: raw F is 2PR/(P+R), unbounded when P and R have opposite signs (cosines can be negative).
    empty_prediction = (f"raw F 0, rescaled (0 - {BASELINE['F']}) / (1 - {BASELINE['F']}) = "
                        f"{rescale(0.0, BASELINE['F']):.4f}")
    summary = (f"BERTScore F1 with {MODEL} (layer {LAYER}, no idf), rescaled with bert-score's baseline: token "
               "embeddings matched by cosine.")
    section = "§2"

    cacheable = True

    def __init__(self, layer: int = LAYER, idf: bool = False, prefix_space: bool = True, specials: str = "weight0",
                 max_tokens: int = MAX_TOKENS, baseline: float | None = BASELINE["F"], **runtime):
        """The defaults are CXR-Report-Metric's code on its pinned stack (docs/metrics.md §2). `layer`: the hidden
        states read (0..6); with another layer, the default baseline is that layer's row, as bert-score picks it.
        `prefix_space=False`:
        RoBERTa's tokens without the leading space, as bert-score 0.3.11 on transformers >= 4.17 and any bert-score
        on transformers 5 encode; `specials="drop"`: <s> and </s> not matched; `max_tokens`: truncation (3..512);
        `baseline`: the b of (F - b) / (1 - b), or None for raw F."""
        if specials not in SPECIALS:
            raise ValueError(f"specials must be one of {', '.join(SPECIALS)}, not {specials!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 2 < max_tokens <= MAX_TOKENS:
            raise ValueError(f"max_tokens must be an integer in 3..{MAX_TOKENS}, not {max_tokens!r}")
        if baseline is not None and (isinstance(baseline, bool) or not isinstance(baseline, int | float)
                                     or not math.isfinite(baseline) or baseline >= 1):
            raise ValueError(f"baseline must be a number below 1 (or None: no rescaling), not {baseline!r}")
        if not isinstance(prefix_space, bool) or not isinstance(idf, bool):
            raise ValueError("prefix_space and idf must be True or False")
        if isinstance(layer, bool) or (MODEL, layer) not in BASELINES:
            raise ValueError(f"layer must be one of {MODEL}'s (0..{len(BASELINES) - 1}), not {layer!r}")
        super().__init__(**runtime)
        if layer != LAYER and baseline == BASELINE["F"]:
            baseline = BASELINES[(MODEL, layer)]["F"]
        self.layer = layer
        self.idf = idf
        self.prefix_space = prefix_space
        self.specials = specials
        self.max_tokens = max_tokens
        self.baseline = None if baseline is None else float(baseline)
        self.model = resolve("BERTSCORE")  # weights located now; loaded only if a feature is not cached
        self._encoder = None

    @property
    def encoder(self):
        if self._encoder is None:
            BertScoreEncoder = models_extra("rexrank.models.bertscore", "BertScoreEncoder")
            self._encoder = BertScoreEncoder(self.model, self.layer, self.runtime, prefix_space=self.prefix_space,
                                             max_tokens=self.max_tokens)
        return self._encoder

    def features(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.encoder.encode([clean(t) for t in texts], self.progress)

    def score_prf(self, candidates, references) -> np.ndarray:
        """[n, 3] raw P, R, F per pair."""
        idf = idf_weights([ids for ids, _ in references]) if self.idf else None
        return np.array([pair_scores(c, r, idf, self.specials) for c, r in zip(candidates, references, strict=True)],
                        dtype=np.float64).reshape(-1, 3)

    def score(self, candidates, references) -> np.ndarray:
        raw = self.score_prf(candidates, references)[:, 2]
        if self.baseline is None:
            return raw
        return np.array([rescale(f, self.baseline) for f in raw])

    def tokenisation(self) -> dict[str, str]:
        """What the token ids depend on besides the weights: the leading space and truncation."""
        return {"space": "lead" if self.prefix_space else "none", "trunc": str(self.max_tokens)}

    def cache_namespace(self) -> str:
        precision = "".join(f"|{k}:{v}" for k, v in self.runtime.settings.items())  # idf, specials: applied later
        # The default tokenisation keeps the namespace it had before it was an option, so caches stay valid.
        tokens = "".join(f"|{k}:{v}" for k, v in self.tokenisation().items()
                         if (k, v) not in {("space", "lead"), ("trunc", str(MAX_TOKENS))})
        return f"bertscore-features:{self.version}|{self.model.identity}|layer:{self.layer}{tokens}{precision}"

    @classmethod
    def departures(cls, signature: Signature) -> list[str]:
        """Its weights, its stack's choices in its own words (a setting signed before it was an option read as
        the published), and any other setting; a variant (a subclass) by its own `published`."""
        return (record.weights(signature) + stack_departures(signature.settings, cls.published)
                + record.settings(signature, cls.published, worded=cls.published))

    def signature(self) -> Signature:
        rescaled = "no" if self.baseline is None else f"F:{self.baseline:.9g}"
        return Signature(self.name, self.version, models={"model": self.model.identity},
                         settings={"layer": str(self.layer), "idf": "refs" if self.idf else "no", **self.tokenisation(),
                                   "specials": SPECIALS[self.specials], "rescale": rescaled, **self.runtime.settings})
