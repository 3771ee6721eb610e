"""RadCliQ-v1 and RadCliQ-v0 composites (docs/metrics.md §5).

Constants decoded from rajpurkarlab/CXR-Report-Metric v1.1.0 `CXRMetric/radcliq-v1.pkl` (v1) and
`normalizer.pkl` + `composite_metric_model.pkl` (v0): a StandardScaler followed by a linear model over
[radgraph_combined, bertscore, semb_score, bleu_score]. Lower is better. The leaderboard reports
1 / mean_over_studies(RadCliQ-v1); because the model is linear it also equals RadCliQ of the component means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rexrank.scorers.base import Composite

# Our metric names for the reference's feature order radgraph_combined, bertscore, semb_score, bleu_score.
COMPONENTS = ("radgraph", "bertscore", "semb_score", "bleu2")


@dataclass(frozen=True)
class LinearComposite:
    scaler_mean: tuple[float, ...]
    scaler_scale: tuple[float, ...]
    coefs: tuple[float, ...]
    intercept: float

    @property
    def weights(self) -> np.ndarray:
        """Per-component slope: coefs / scale."""
        return np.asarray(self.coefs) / np.asarray(self.scaler_scale)

    def __call__(self, components: Sequence[np.ndarray | float]) -> np.ndarray:
        """Per-study value from the four components in COMPONENTS order (arrays or scalars)."""
        # Summed term by term in component order, not with `@`: a BLAS dot product sums in an order that depends
        # on the CPU's vector width, and the shipped official figures must come out byte for byte on any machine.
        terms = [(np.asarray(c, dtype=np.float64) - mean) / scale * coef
                 for c, mean, scale, coef in zip(components, self.scaler_mean, self.scaler_scale, self.coefs,
                                                 strict=True)]
        return ((terms[0] + terms[1]) + terms[2]) + terms[3] + self.intercept

    def bounds(self, components: Sequence[float], half_widths: Sequence[float]) -> tuple[float, float]:
        """Exact range of the composite when each component may lie anywhere within +-half_width."""
        centre = float(self(components))
        spread = sum(abs(w) * float(h) for w, h in zip(self.weights.tolist(), half_widths, strict=True))
        return centre - spread, centre + spread


RADCLIQ_V1 = LinearComposite(
    scaler_mean=(0.5379231241355762, 0.6175725628125001, 0.7647942121140658, 0.44738335396242174),
    scaler_scale=(0.3028258411486429, 0.22430938459304575, 0.2539439110169773, 0.2989271671041838),
    coefs=(-0.37708368261038905, -0.37030009974480316, -0.25261621789593225, 4.315048405024756e-12),
    intercept=2.4665525613232559e-10,
)

RADCLIQ_V0 = LinearComposite(
    scaler_mean=(0.5398376019082272, 0.6312549595000001, 0.7716797866672277, 0.4607372064809605),
    scaler_scale=(0.3018344440559102, 0.22466950746141123, 0.24750333805236252, 0.30336670936092264),
    coefs=(-0.4796252644863446, -0.6762170542369337, -0.46366575161751994, 0.2165861905287535),
    intercept=1.641666666666666,
)


class RadCliQ(Composite):
    """Per-study RadCliQ; the dataset value is 1 / mean (the `inverse_mean` statistic)."""

    version = "1"
    needs = COMPONENTS
    statistic = "inverse_mean"
    empty_prediction = "its components' empty-prediction scores, combined"
    summary = ("BLEU-2, BERTScore, SembScore and RadGraph combined by a linear model fitted to radiologists' error "
               "counts; the board shows 1 / the mean (higher is better).")
    section = "§5"

    def __init__(self, name: str, title: str, model: LinearComposite, board: float | None = None,
                 demo: float | None = None, ranks: bool = False):
        self.name, self.title, self.model, self.board, self.demo, self.ranks = name, title, model, board, demo, ranks

    def combine(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.model([columns[name] for name in COMPONENTS])
