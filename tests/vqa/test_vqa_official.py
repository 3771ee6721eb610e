"""ReXrank's published VQA table (../shared/reference/rexrank_results/vqa), imported exactly and shipped as the
importer writes it."""

import csv
import json

import pytest

from rexrank.catalog import VQA_CATEGORIES
from rexrank.cli import main
from rexrank.vqa.official import FILE, SHIPPED, SHIPPED_AS_OF, read_official, shipped


@pytest.fixture(scope="module")
def tables(reference_dir):
    folder = reference_dir / "rexrank_results" / "vqa"
    return folder / "vqa_results.csv", folder / "model_comparison.csv"


def rows_of(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_shipped_figures_are_what_the_importer_writes(tables, tmp_path, capsys):
    assert main(["import-rexvqa-csv", *map(str, tables), "--out", str(tmp_path), "--as-of", SHIPPED_AS_OF]) == 0
    assert (tmp_path / FILE).read_bytes() == (SHIPPED / FILE).read_bytes()
    assert "rexrank import-rexvqa-csv" in (SHIPPED / "README.md").read_text()  # how to remake it, and whose it is


def test_every_published_figure_is_imported_exactly(tables):
    published, compared = (rows_of(t) for t in tables)
    figures = shipped()
    assert figures["attribution"].startswith("Figures and model names as ReXrank published them")
    assert figures["provenance"] == "imported" and figures["questions"] == 41_007
    assert [r["model"] for r in figures["rows"]] == [r["Model Name"] for r in published]  # in the table's order
    for row, table_row in zip(figures["rows"], published):
        assert row["rank"] == int(table_row["Rank"]) and row["url"] == table_row["Model URL"]
        assert row["institution"] == table_row["Institution"]
        assert row["overall"] == float(table_row["Overall Accuracy"])
        assert row["categories"] == {c: float(table_row[c]) for c in VQA_CATEGORIES}
        twin = next(r for r in compared if r["Model"] == row["short_name"])
        assert float(twin["Failed Extractions"]) == row["failed_extractions"]
        assert float(twin["Overall Accuracy"]) == row["overall"]
    failed = {r["model"]: r["failed_extractions"] for r in figures["rows"]}
    assert failed["LLaVA-1.5-7B"] == 971 and failed["MedGemma-4B-it"] == 0  # as the issue quotes them


def test_a_row_without_its_twin_is_refused_naming_it(tables, tmp_path):
    results, comparison = tables
    changed = tmp_path / "model_comparison.csv"
    changed.write_text(comparison.read_text().replace("0.8217", "0.8218"))
    with pytest.raises(Exception, match=r"vqa_results.csv:2: MedGemma-4B-it: no row of model_comparison.csv"):
        read_official(results, changed)
    bad = tmp_path / "vqa_results.csv"
    bad.write_text("Rank,Model\n1,x\n")
    with pytest.raises(Exception, match="header is not the official one"):
        read_official(bad, comparison)


def test_a_bad_table_on_the_command_line_is_exit_2(tables, tmp_path, capsys):
    bad = tmp_path / "vqa_results.csv"
    bad.write_text(tables[0].read_text().replace("0.6656", "zero", 1))
    assert main(["import-rexvqa-csv", str(bad), str(tables[1])]) == 2
    err = capsys.readouterr().err
    assert "vqa_results.csv:3: Janus-Pro-7B: 'zero' is not a number" in err and "Traceback" not in err
    assert json.loads((SHIPPED / FILE).read_text())["published"] == SHIPPED_AS_OF
