"""RadGraph-F1 on hand-made graphs: the reference's sets, F1 rules and tokenisation."""

import pytest

from rexrank.scorers.radgraph import Entity, Graph, f1, radgraph_f1, tokenize_report

EFFUSION = Entity("effusion", "OBS-DP", 2, 2)
LEFT = Entity("left", "ANAT-DP", 1, 1)
PLEURAL = Entity("pleural", "ANAT-DP", 3, 3)


def graph(*entities, relations=()):
    return Graph(tuple(entities), tuple(relations))


def test_tokenisation_splits_the_reference_class_only():
    assert tokenize_report("Small L-sided effusion, stable.No change (1.2cm)/prior:ok!?") == [
        "Small", "L-sided", "effusion", ",", "stable", ".", "No", "change", "(", "1", ".", "2cm", ")", "/",
        "prior", ":", "ok", "!", "?"]
    assert tokenize_report("  a ,b  ") == ["a", ",", "b"]
    assert tokenize_report("") == []


def test_identical_graphs_score_one():
    g = graph(LEFT, EFFUSION, relations=[(0, 1, "located_at")])
    assert radgraph_f1(g, g) == (1.0, 1.0, 1.0)


def test_two_empty_graphs_score_zero_not_one():
    assert radgraph_f1(Graph(), Graph()) == (0.0, 0.0, 0.0)
    assert radgraph_f1(graph(EFFUSION), graph(EFFUSION)) == (1.0, 0.0, 0.5)  # no relation on either side: 0


def test_matching_is_on_text_and_label_case_sensitive_positions_ignored():
    reference = graph(LEFT, EFFUSION, PLEURAL, relations=[(1, 0, "located_at"), (1, 2, "located_at")])
    candidate = graph(Entity("effusion", "OBS-DP", 9, 9), Entity("Left", "ANAT-DP", 0, 0),
                      Entity("pleural", "ANAT-DP", 5, 5), relations=[(0, 2, "located_at"), (0, 1, "located_at")])
    entity, relation, combined = radgraph_f1(candidate, reference)
    # entities: 2 of 3 match ("Left" != "left"); relations: 1 of 2 match
    assert entity == pytest.approx(2 / 3) and relation == pytest.approx(0.5)
    assert combined == pytest.approx((2 / 3 + 0.5) / 2)


def test_sets_collapse_duplicates_and_labels_matter():
    reference = graph(EFFUSION, Entity("effusion", "OBS-DP", 7, 7))  # the same (text, label) twice: one element
    candidate = graph(Entity("effusion", "OBS-U", 2, 2), EFFUSION)
    assert reference.entity_set() == {("effusion", "OBS-DP")}
    assert radgraph_f1(candidate, reference)[0] == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_f1_is_the_reference_compute_f1():
    assert f1({1, 2, 3}, {2, 3, 4, 5}) == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    assert f1(set(), {1}) == 0 and f1({1}, set()) == 0 and f1({1}, {2}) == 0


def test_from_the_reference_json_format():
    data = {"entities": {
        "1": {"tokens": "left", "label": "ANAT-DP", "start_ix": 1, "end_ix": 1, "relations": []},
        "2": {"tokens": "effusion", "label": "OBS-DP", "start_ix": 2, "end_ix": 2,
              "relations": [["located_at", "1"]]},
    }}
    g = Graph.from_reference_json(data)
    assert g.entity_set() == {("left", "ANAT-DP"), ("effusion", "OBS-DP")}
    assert g.relation_set() == {(("effusion", "OBS-DP"), ("left", "ANAT-DP"), "located_at")}
    assert Graph.from_reference_json({"entities": {}}) == Graph()


def test_f1radgraph_reward_levels_are_the_packages_not_rexranks():
    from rexrank.scorers.radgraph import reward, reward_elements

    ref = graph(LEFT, EFFUSION, relations=[(1, 0, "located_at")])
    cand = graph(Entity("Left", "ANAT-DP", 0, 0), EFFUSION, relations=[(1, 0, "located_at")])
    assert reward_elements(ref, "simple") == {("left", "ANAT-DP"), ("effusion", "OBS-DP")}
    assert reward_elements(ref, "partial") == {("left", "ANAT-DP"), ("effusion", "OBS-DP", True)}
    assert reward_elements(ref, "complete") == {("left", "ANAT-DP"), ("effusion", "OBS-DP", "located_at", "left")}
    assert reward(cand, ref, "simple") == 0.5  # "Left" != "left": case-sensitive here
    assert reward(cand, ref, "complete") == 0.5  # the relation tuple is lowercased and matches; "Left" does not
    assert reward(Graph(), Graph(), "simple") == 0.0 and reward(cand, Graph(), "partial") == 0.0
    with pytest.raises(ValueError, match="unknown reward level 'all'"):
        reward(cand, ref, "all")
