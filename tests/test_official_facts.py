"""The official models' access and training data (`rexrank.official.FACTS`, resources/official/models.tsv): one row
per model on ReXrank's tables, every fact with the page that states it, carried into every imported row."""

import json

import pytest

from rexrank.errors import InputError
from rexrank.official import FACTS, FACTS_HEADER, SHIPPED, model_facts, read_official_csv


def test_every_official_model_has_a_row_and_every_fact_its_source(reference_dir):
    names = {r.model.name for t in sorted((reference_dir / "rexrank_results").glob("*.csv"))
             for r in read_official_csv(t)}
    facts = model_facts()
    assert all(r.facts is not None for t in (reference_dir / "rexrank_results").glob("*.csv")
               for r in read_official_csv(t))
    assert {n.casefold().replace("_", "-") for n in names} == set(facts)  # no row for a model not on the tables
    for name, fact in facts.items():
        assert bool(fact.access) == bool(fact.access_source), name
        assert bool(fact.trained_on) == bool(fact.trained_on_source), name
        for source in (fact.access_source, fact.trained_on_source):
            assert not source or source.startswith("https://"), (name, source)
    assert facts["maira-2"].trained_on == ("MIMIC-CXR", "PadChest", "USMix (private)")
    assert facts["gpt4v"].access == "api" and facts["gpt4v"].trained_on == ()
    assert facts["cheXpertplus-chex".casefold()].trained_on == ("CheXpert Plus",)


def test_the_shipped_rows_carry_their_models_facts():
    for path in (SHIPPED / "imported").glob("*.json"):
        data = json.loads(path.read_text())
        name = data["model"]["name"].casefold().replace("_", "-")
        assert data["checks"]["model_facts"] == model_facts()[name].to_json(), path.name


def test_a_table_of_facts_that_is_not_as_it_should_be_is_refused(tmp_path):
    header = "\t".join(FACTS_HEADER)
    bad = {"no source": "A\topen-weights\t\t\t\t",
           "access 'free'": "A\tfree\thttps://a\t\t\t",
           "without its source": "A\tunknown\t\tMIMIC-CXR\t\t",
           "a second time": "A\tapi\thttps://a\t\t\t\nA\tapi\thttps://a\t\t\t",
           "fields, not 6": "A\tapi\thttps://a"}
    for i, (why, body) in enumerate(bad.items()):
        path = tmp_path / f"{i}.tsv"
        path.write_text(f"# a comment\n{header}\n{body}\n")
        with pytest.raises(InputError, match=why if why != "no source" else "without its source"):
            model_facts(path)
    path = tmp_path / "header.tsv"
    path.write_text("name\taccess\n")
    with pytest.raises(InputError, match="expected the header"):
        model_facts(path)
    assert FACTS.name == "models.tsv" and FACTS.parent == SHIPPED
