"""RadGraph inference on a tiny random archive in the real format: batching, long reports, odd input, F1."""

import numpy as np
import pytest
import torch
from fixtures.metric_contract import DIFFERS, MetricContract, ScorerCase
from fixtures.reports import reports

from rexrank.errors import MetricUnavailable
from rexrank.hf_metric import compute
from rexrank.scorers import SCORERS
from rexrank.scorers.radgraph import Graph, RadGraphF1, from_arrays, radgraph_f1, to_arrays

ODD = ["", "a", ".", "\u200b hernia", "ÉMILE's naïve café\u00a0x-ray;  résumé", "1.5-cm nodule (R/L)!"]
LONG = " ".join(reports(1, seed=9, long_every=1))  # far over 510 wordpieces: the folded path


@pytest.fixture
def scorer(local_models):
    return RadGraphF1(batch_size=4, progress=False)


@pytest.mark.slow
def test_graphs_do_not_depend_on_batching(scorer):
    texts = reports(10, seed=4) + ODD + [LONG]
    batched = scorer.model.graphs(texts, progress=False)
    one_by_one = [scorer.model.graphs([t], progress=False)[0] for t in texts]
    assert batched == one_by_one
    assert sum(len(g.entities) for g in batched) > 20 and sum(len(g.relations) for g in batched) > 5
    labels = {e.label for g in batched for e in g.entities}
    assert len(labels) >= 2 and labels <= {"ANAT-DP", "OBS-DP", "OBS-DA", "OBS-U"}


@pytest.mark.slow
def test_a_long_report_is_folded_not_truncated(scorer):
    from rexrank.scorers.radgraph import tokenize_report

    ids, offsets = scorer.model._pieces(tokenize_report(LONG))
    assert len(ids) > 510
    first_in_second_segment = next(i for i, o in enumerate(offsets) if o and o[0] >= 510)
    graph = scorer.model.graphs([LONG], progress=False)[0]
    assert max(e.end for e in graph.entities) > first_in_second_segment  # found beyond the first segment


def test_odd_reports_and_the_empty_report(scorer):
    graphs = scorer.model.graphs(ODD, progress=False)
    assert all(isinstance(g, Graph) for g in graphs)
    assert all(e.text == "None" for e in graphs[0].entities)  # the reference scores "" as the word None
    assert scorer.model.graphs(["   "], progress=False) == [graphs[0]]  # the reference crashes; we do not


def test_f1_end_to_end_and_cache_round_trip(scorer):
    texts = reports(6, seed=2)
    graphs = scorer.model.graphs(texts, progress=False)
    for g in graphs:
        assert from_arrays(to_arrays(g)) == g
    scores = scorer(texts[:3], texts[3:])
    assert scores.tolist() == [radgraph_f1(c, r)[2] for c, r in zip(graphs[:3], graphs[3:])]
    same = scorer(texts[:2], texts[:2])
    assert np.all((same == 1.0) | (same == 0.5))  # identical reports: entities match, relations if any


def test_compute_and_signature(local_models):
    text = reports(1, seed=3)[0]
    graph = RadGraphF1(progress=False).model.graphs([text], progress=False)[0]
    expected = 0.0 if not graph.entities else 1.0 if graph.relations else 0.5  # identical reports
    out = compute("radgraph", [text], [text])
    assert out["radgraph"] == out["radgraph_combined"] == expected
    assert out["signature"].startswith("radgraph:1|radgraph:local:")


def test_broken_archives_are_named(local_models, tiny_radgraph, tmp_path, monkeypatch):
    import shutil

    broken = tmp_path / "radgraph"
    shutil.copytree(tiny_radgraph, broken)
    state = torch.load(broken / "weights.th")
    del state["_relation._relation_scorers.radgraph__relation_labels.weight"]
    torch.save(state, broken / "weights.th")
    monkeypatch.setenv("REXRANK_MODEL_RADGRAPH", str(broken))
    with pytest.raises(MetricUnavailable, match=r"weights.th lack \['_relation._relation_scorers"):
        RadGraphF1(progress=False)(["a"], ["b"])
    (broken / "vocabulary" / "radgraph__ner_labels.txt").unlink()
    with pytest.raises(MetricUnavailable, match="radgraph__ner_labels.txt is missing"):
        RadGraphF1(progress=False)(["a"], ["b"])


def test_the_archive_file_is_unpacked_once_and_safely(local_models, tiny_radgraph, tmp_path, monkeypatch):
    import tarfile

    text = reports(1, seed=8)[0]
    from_folder = RadGraphF1(progress=False).model.graphs([text], progress=False)
    archive = tmp_path / "radgraph.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tiny_radgraph, arcname="radgraph")
    monkeypatch.setenv("REXRANK_MODEL_RADGRAPH", str(archive))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for _ in range(2):  # the second time from the unpacked copy
        assert RadGraphF1(progress=False).model.graphs([text], progress=False) == from_folder
    assert len(list((tmp_path / "xdg" / "rexrank" / "radgraph").rglob("weights.th"))) == 1

    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(tiny_radgraph / "config.json", arcname="../escaped.json")
    monkeypatch.setenv("REXRANK_MODEL_RADGRAPH", str(evil))
    with pytest.raises(MetricUnavailable, match="cannot be unpacked"):
        RadGraphF1(progress=False)(["a"], ["b"])
    assert not (tmp_path / "xdg" / "rexrank" / "escaped.json").exists()


@pytest.mark.slow
def test_relation_pairs_in_blocks_give_the_same_graph(scorer, monkeypatch):
    import rexrank.models.radgraph as radgraph_model

    texts = [LONG, reports(1, seed=6)[0]]
    whole = scorer.model.graphs(texts, progress=False)
    monkeypatch.setattr(radgraph_model, "PAIR_CELLS", 5000)  # a few source rows per block
    assert scorer.model.graphs(texts, progress=False) == whole


@pytest.mark.slow
@pytest.mark.parametrize("pair_cells", [None, 5000])
def test_reports_graphed_together_equal_reports_graphed_alone(scorer, monkeypatch, pair_cells):
    """The heads run over all reports of a batch at once: each report keeps its own k of top spans, and neither
    the other reports' spans nor padding reach its top-k or its pairs (also with pair blocks of a few rows)."""
    import rexrank.models.radgraph as radgraph_model

    if pair_cells:
        monkeypatch.setattr(radgraph_model, "PAIR_CELLS", pair_cells)
    texts = ["", "a", LONG, *reports(3, seed=5), "two words", "   ", "\u200b"]
    model, batches = scorer.model, []
    forward = model._forward
    monkeypatch.setattr(model, "_forward", lambda batch: batches.append(len(batch)) or forward(batch))
    monkeypatch.setattr(model, "batch_size", len(texts))
    together = model.graphs(texts, progress=False)
    monkeypatch.setattr(model, "batch_size", 1)
    assert model.graphs(texts, progress=False) == together
    assert batches == [len(texts)] + [1] * len(texts)
    assert together[2].relations and together[3].relations  # the long and a normal report have pairs to compare


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def radgraph_empty(case, ctx, references):
    """"the graph of the single word None (what the reference substitutes)"."""
    return case.scores(ctx, ["None"] * len(references), references)


RADGRAPH = ScorerCase(
    name="radgraph", cls=SCORERS["radgraph"], tolerance=0.0,
    why="graphs are argmax labels (no near tie in these texts) and F1 is set counts",
    nfd=DIFFERS, nfd_why="the model reads accent-stripped wordpieces, but entities are matched by the report's own "
    "tokens, which keep the form they were written in",
    empty_rule=radgraph_empty, variant={"dtype": "bf16"},
    skips={"oracle": "radgraph 0.1.18 runs in a Python of its own, on the same tiny weights: "
                     "tests/test_reference_parity.py::test_graphs_equal_radgraph_0_1_18 and "
                     "test_reward_levels_equal_f1radgraph_0_1_18"})


class TestRadGraphContract(MetricContract):
    case = RADGRAPH
