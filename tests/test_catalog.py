"""The catalog is the one definition of the test sets and the board's metrics: what other modules show, check and
count is read from it, and it agrees with the official splits rexrank ships."""

from rexrank import catalog
from rexrank.data.build import OFFICIAL, official_ids
from rexrank.scorers import BOARD_METRICS, METRICS


def test_every_official_size_is_the_number_of_ids_rexrank_ships():
    for (name, split), studies in OFFICIAL.items():
        ids = official_ids(name, split)
        if catalog.TEST_SETS[name].private:  # the maintainers' own: rexrank ships none of its ids
            assert ids is None, (name, split)
            continue
        assert ids is not None, f"{name} {split}: ship its study ids as src/rexrank/resources/splits/{name}.{split}.txt"
        assert len(ids) == studies, (name, split)


def test_the_board_metrics_are_metrics_and_the_sets_partition_into_public_and_private():
    assert set(BOARD_METRICS) <= set(METRICS)
    assert set(catalog.PUBLIC_DATASETS).isdisjoint(catalog.PRIVATE_DATASETS)
    assert set(catalog.DATASETS) == set(catalog.TEST_SETS)
    assert catalog.PRIVATE_DATASETS == tuple(n for n, t in catalog.TEST_SETS.items() if t.private)


def test_what_other_modules_name_comes_from_the_catalog():
    from rexrank import official, submission
    from rexrank.board import schema, views
    from rexrank.llm.guard import credentialed

    assert views.DATASET_TITLES == {n: t.title for n, t in catalog.TEST_SETS.items()}
    assert official.TABLE_KEYS["gradienthealth"] == "rexgradient" and official.SPLITS["chexpert-plus"] == "valid"
    assert submission.DATASETS == catalog.DATASETS and schema.RANK_BY in BOARD_METRICS
    assert schema.METRICS[:len(BOARD_METRICS)] == BOARD_METRICS  # the board's columns: its first
    # the guard knows each credentialed set by its name, under the title the board shows, and no public one
    assert [credentialed(t.name) for t in catalog.TEST_SETS.values()] == [
        t.title if t.credentialed else None for t in catalog.TEST_SETS.values()]


def test_a_test_sets_split_size_privacy_and_card_are_stated_once_in_the_catalog():
    """The builders and the dataset cards read the catalog: change a size there and the card says it."""
    from dataclasses import replace

    from rexrank.builders import BUILDERS

    for name, test_set in catalog.TEST_SETS.items():
        built = BUILDERS[name]
        assert (built.default_split, built.always_private, built.info.credentialed) == (
            test_set.split, test_set.private, test_set.credentialed)
        assert f"{test_set.studies:,}" in built.info.description and built.rexrank_file == test_set.rexrank_file
    assert "2,348" in replace(catalog.TEST_SETS["mimic-cxr"], studies=2_348).info.description
