import json

import numpy as np
import pytest
from fixtures.metric_contract import DIFFERS, CompositeCase, MetricContract
from test_bertscore import BERTSCORE
from test_bleu import BLEU2
from test_radgraph import RADGRAPH
from test_semb import SEMB

from rexrank.scorers import COMPOSITES
from rexrank.scorers.radcliq import COMPONENTS, RADCLIQ_V0, RADCLIQ_V1
from rexrank.stats import estimate


@pytest.fixture(scope="module")
def golden(reference_dir):
    return json.loads((reference_dir / "radcliq.json").read_text())


@pytest.mark.parametrize(("version", "model"), [("v1", RADCLIQ_V1), ("v0", RADCLIQ_V0)])
def test_constants_are_the_decoded_reference(golden, version, model):
    assert golden["feature_order"] == ["radgraph_combined", "bertscore", "semb_score", "bleu_score"]
    assert COMPONENTS == ("radgraph", "bertscore", "semb_score", "bleu2")
    ref = golden[version]
    assert list(model.scaler_mean) == ref["scaler_mean"]
    assert list(model.scaler_scale) == ref["scaler_scale"]
    assert list(model.coefs) == ref["coefs"]
    assert model.intercept == ref["intercept"]


def test_worked_example_medversa(golden):
    example = golden["worked_examples"][0]
    components = [example[k] for k in golden["feature_order"]]
    radcliq = float(RADCLIQ_V1(components))
    assert radcliq == pytest.approx(example["radcliq_v1"], abs=5e-5)
    assert round(1 / radcliq, 3) == 0.920  # from the rounded components; published 0.919
    assert abs(1 / radcliq - example["inv_radcliq_v1_published"]) < 0.0015


def test_per_study_formula_by_hand(golden):
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, size=(20, 4))
    for version, model in (("v1", RADCLIQ_V1), ("v0", RADCLIQ_V0)):
        ref = golden[version]
        by_hand = [sum(c * (xi - m) / s for c, xi, m, s in zip(ref["coefs"], row, ref["scaler_mean"],
                                                                  ref["scaler_scale"])) + ref["intercept"]
                   for row in x]
        np.testing.assert_allclose(model(list(x.T)), by_hand, rtol=0, atol=1e-12)


def test_dataset_value_is_inverse_of_mean_not_mean_of_inverses():
    rng = np.random.default_rng(2)
    columns = {name: rng.uniform(0, 0.6, 200) for name in COMPONENTS}
    per_study = COMPOSITES["radcliq_v1"].combine(columns)
    result = estimate(per_study, COMPOSITES["radcliq_v1"].statistic, resamples=200)
    assert result.value == pytest.approx(1 / per_study.mean(), rel=1e-12)
    assert result.value != pytest.approx(np.mean(1 / per_study), rel=1e-3)
    assert result.mean == pytest.approx(per_study.mean(), rel=1e-12)
    # linear: RadCliQ of the component means equals the mean RadCliQ
    assert float(RADCLIQ_V1([c.mean() for c in columns.values()])) == pytest.approx(per_study.mean(), abs=1e-12)


def test_perfect_pairs_make_a_negative_mean_that_is_flagged():
    perfect = float(RADCLIQ_V1([1.0, 1.0, 1.0, 1.0]))
    assert perfect == pytest.approx(-1.44, abs=0.01)  # docs/metrics.md §5: a perfect pair scores about -1.44
    result = estimate(np.full(30, perfect), "inverse_mean", resamples=100)
    assert result.non_positive_mean
    assert result.value < 0
    healthy = estimate(np.full(30, 1.1), "inverse_mean", resamples=100)
    assert not healthy.non_positive_mean


def test_bounds_contain_every_corner():
    centre = [0.273, 0.43, 0.315, 0.193]
    low, high = RADCLIQ_V1.bounds(centre, [0.0005] * 4)
    corners = np.array(np.meshgrid(*[[c - 0.0005, c + 0.0005] for c in centre])).reshape(4, -1)
    values = RADCLIQ_V1(list(corners))
    assert values.min() == pytest.approx(low, abs=1e-12) and values.max() == pytest.approx(high, abs=1e-12)


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def composite_case(name: str) -> CompositeCase:
    composite = COMPOSITES[name]
    components = {c.name: c for c in (BLEU2, BERTSCORE, SEMB, RADGRAPH)}
    components = {need: components[need] for need in composite.needs}
    tolerance = float(sum(abs(w) * c.tolerance for w, c in zip(composite.model.weights, components.values())))
    return CompositeCase(
        name=name, composite=composite, components=components, tolerance=tolerance,
        why="its components' tolerances through its linear weights (sum |coef / scale| x tolerance)",
        nfd=DIFFERS, nfd_why="its components BLEU-2, BERTScore and RadGraph differ",
        variant={"bertscore": {"idf": True}},
        skips={"oracle": "its components' scores, each held to its own oracle, combined by CXR-Report-Metric's "
                         "constants: test_constants_are_the_decoded_reference, test_worked_example_medversa"})


class TestRadCliQv1Contract(MetricContract):
    case = composite_case("radcliq_v1")


class TestRadCliQv0Contract(MetricContract):
    case = composite_case("radcliq_v0")
