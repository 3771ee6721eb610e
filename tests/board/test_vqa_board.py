"""The board's VQA tab's rows and tables (rexrank.board.vqa), without Gradio: ReXrank's published table exactly as
rexrank ships it, the job's generated rows beside it, sort, filters, the Model tab's section, files left out."""

import json

import pytest

from rexrank.board import vqa
from rexrank.board.sources import DEMO, demo_repo
from rexrank.board.views import SOURCES
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.vqa.official import shipped
from rexrank.vqa.score import read_per_question


def test_the_official_table_is_shown_exactly_as_shipped():
    published = shipped()
    table = vqa.vqa_table(vqa.read_vqa(None))  # the board with nothing named: ReXrank's figures alone
    assert len(table) == len(published["rows"]) > 0
    for row, (_, shown) in zip(published["rows"], table.iterrows()):
        assert shown["Model"].replace("\\", "").startswith(f"[{row['model']}]")
        figures = {"Overall": row["overall"], **row["categories"]}
        for title, value in figures.items():  # 4 decimals, as published, and no CI
            assert shown[title] == f"{value:.{vqa.PUBLISHED_DECIMALS}f}" and float(shown[title]) == value
        assert shown["Failed extractions"] == f"{row['failed_extractions']:,}"
        assert shown["Source"] == SOURCES["imported"] and shown["Rank"] == str(row["rank"])
        assert shown["Questions"] == f"{published['questions']:,}"
    assert list(table.columns[table.columns.get_loc("Source") + 1:][:len(VQA_CATEGORIES)]) == list(VQA_CATEGORIES)


def test_the_demo_shows_generated_rows_with_cis_beside_the_published_ones():
    frame = vqa.read_vqa(DEMO)
    assert [s for _, s in vqa.splits(frame)][0] == VQA_PRIVATE["split"]  # the challenge's set first
    private = vqa.vqa_table(frame)
    generated = private[private["Source"] == SOURCES["generated"]]
    assert len(generated) == 1 and len(private) == len(shipped()["rows"]) + 1
    assert generated["Overall"].str.contains(r"±|\[", regex=True).all()  # a CI on the maintainers' numbers
    numbers = [row[private.columns.get_loc("Overall")] for row in private.attrs["numbers"]]
    assert numbers == sorted(numbers, reverse=True)  # ranked by overall accuracy, both kinds together
    # the public synthetic split: both answer files scored for real, failed extractions as the scorer counted them
    test = vqa.vqa_table(frame, "test")
    for path in sorted(demo_repo().glob("submissions/*/vqa/rexvqa.vqa.test.json")):
        record = json.loads(path.read_text())
        overall = next(r for r in record["rows"] if r["category"] == "overall")
        per_question = read_per_question(path)
        assert overall["failed_extractions"] == per_question["failure"].notna().sum()
        name = json.loads((path.parent.parent / "submission.json").read_text())["name"]
        row = test[test["Model"].str.replace("\\", "").str.startswith(f"[{name}]")].iloc[0]
        assert row["Failed extractions"] == f"{overall['failed_extractions']:,}"
        assert row["Overall"].startswith(f"{per_question['correct'].mean():.3f}")
    assert test["Failed extractions"].tolist() != ["0"] * len(test)  # prose answers the rule cannot read


def test_sort_filter_and_search():
    frame = vqa.read_vqa(DEMO)
    for key, column in vqa.SORT_COLUMN.items():
        table = vqa.vqa_table(frame, sort_by=key)
        title = "Overall" if column == vqa.OVERALL else column
        values = [row[table.columns.get_loc(title)] for row in table.attrs["numbers"]]
        assert values == sorted(values, reverse=True), key
    failed = vqa.vqa_table(frame, sort_by="failed")
    counts = [row[failed.columns.get_loc("Failed extractions")] for row in failed.attrs["numbers"]]
    assert counts == sorted(counts)
    published = vqa.vqa_table(frame, source="published")
    assert set(published["Source"]) == {SOURCES["imported"]}
    assert vqa.vqa_table(frame, source="generated")["Rank"].tolist() == ["2"]  # its rank among all, kept
    assert set(vqa.vqa_table(frame, search="google")["Institution"]) == {"Google"}
    with pytest.raises(ValueError, match="sort"):
        vqa.vqa_table(frame, sort_by="nowhere")


def test_a_models_section_and_files_left_out(tmp_path):
    frame = vqa.read_vqa(DEMO)
    section = vqa.model_vqa(frame, "Demo-Careful")
    assert len(section) == len(vqa.splits(frame)) and section["Overall"].str.contains(r"±|\[", regex=True).all()
    assert vqa.model_vqa(frame, "Demo-Template").empty  # no VQA result: no section
    # a results repo with a broken VQA file: left out, named, the rest shown
    folder = tmp_path / "submissions" / "bad" / "vqa"
    folder.mkdir(parents=True)
    (folder / "rexvqa.vqa.test.json").write_text(json.dumps({"dataset": "rexvqa", "task": "vqa", "model": "Bad",
                                                             "split": "test", "rows": [
                                                                 {"category": "overall", "accuracy": 1.5}]}))
    read = vqa.read_vqa(tmp_path)
    assert len(read) == len(shipped()["rows"]) and "bad/vqa/rexvqa.vqa.test.json" in read.attrs["unreadable"][0]


def test_a_vqa_file_no_signed_ledger_entry_names_is_not_shown(tmp_path):
    """A pull request's own `vqa/` file merged by the Hub's button (or a job's file edited after it): left out and
    named, whatever it claims; the same file once the job's signed entry names its bytes: shown."""
    import shutil

    from rexrank.demo.board import demo_key, demo_keys
    from rexrank.rules import ledger

    repo = tmp_path / "repo"
    shutil.copytree(demo_repo(), repo)
    genuine = next(repo.glob("submissions/demo-prose/vqa/rexvqa.vqa.*.json"))
    forged = json.loads(genuine.read_text())
    forged["rows"] = [{**row, "accuracy": 1.0, "low": 1.0, "high": 1.0} for row in forged["rows"]]
    genuine.write_text(json.dumps(forged))
    rows, left_out = vqa.read_results(repo, demo_keys())
    assert "Demo-Prose" not in {r["model"] for r in rows} and any(
        "demo-prose/vqa" in note and "changed since" in note for note in left_out)
    ledger.record_folder(repo, "demo-prose", owner="demo-prose", name="Demo-Prose", institution="rexrank demo",
                         files={genuine.name.removesuffix(".json"): genuine.read_bytes()}, pr=1, head="1" * 40,
                         job="inference", key=demo_key())
    assert "Demo-Prose" in {r["model"] for r in vqa.read_results(repo, demo_keys())[0]}
