"""`rexrank build-dataset rexvqa` on a synthetic download in the Hub's layout (rajpurkarlab/ReXVQA's
`metadata/<split>_vqa_data.json`), read back by `load_dataset`. Every question here is synthetic."""

import json

import pytest

from rexrank.builders import BUILDERS
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.cli import main
from rexrank.vqa.dataset import BUILDER, NAME, category, load_questions

OPTIONS = ["A. No effusion", "B. Small left effusion", "C. Pneumothorax", "D. Cardiomegaly"]
TASKS = ["presence_assessment", "Location and Distribution Assessment", "negation assessment",
         "differential_diagnosis", "geometric_information_assessment"]


def record(i: int, **changes) -> dict:
    return {"study_id": f"s{i // 2}", "question": f"Synthetic question {i}?", "options": OPTIONS,
            "correct_answer": "ABCD"[i % 4], "task_name": TASKS[i % 5], "category": "Synthetic",
            "subcategory": "Synthetic", "ImagePath": [f"../deid_png/s{i // 2}/f.png"], "Findings": "Synthetic.",
            **changes}


def download(tmp_path, test=None, valid=None):
    folder = tmp_path / "ReXVQA" / "metadata"
    folder.mkdir(parents=True)
    (folder / "test_vqa_data.json").write_text(json.dumps(test or {f"q{i}": record(i) for i in range(10)}))
    (folder / "valid_vqa_data.json").write_text(json.dumps(valid or {f"v{i}": record(i) for i in range(3)}))
    return tmp_path / "ReXVQA"


def test_builds_the_split_from_the_hubs_files_and_load_dataset_reads_it(tmp_path, capsys):
    from datasets import load_dataset

    source = download(tmp_path)
    assert main(["build-dataset", NAME, "--source", str(source), "--out", str(tmp_path / "built")]) == 0
    assert capsys.readouterr().out.startswith("rexvqa test: 10 questions on 5 studies")
    loaded = load_dataset(str(tmp_path / "built"), split="test")
    assert loaded.num_rows == 10 and loaded[0]["question_id"] == "q0" and loaded[0]["options"] == OPTIONS
    assert set(loaded["category"]) == set(VQA_CATEGORIES)  # every spelling of task_name read as the table's names
    assert "Findings" not in loaded.column_names  # the report's text stays in the user's download
    info = json.loads((tmp_path / "built" / "build_info.json").read_text())
    assert info["counts"]["categories"] == {c: 2 for c in VQA_CATEGORIES} and info["known"]["matches"]
    questions, split = load_questions(tmp_path / "built")
    assert split == "test" and len(questions) == loaded.num_rows
    assert main(["build-dataset", NAME, "--source", str(source), "--split", "valid",
                 "--out", str(tmp_path / "valid")]) == 0
    assert load_dataset(str(tmp_path / "valid"), split="valid").num_rows == 3


def test_the_private_sets_layout_is_held_to_its_counts(tmp_path):
    source = tmp_path / "private_vqa_data.json"
    source.write_text(json.dumps({f"p{i}": record(i) for i in range(4)}))
    build = BUILDER.read([source], "private")
    folder = BUILDER.write(build, tmp_path / "private")
    known = json.loads((folder / "build_info.json").read_text())["known"]
    assert known["expected"] == {"questions": VQA_PRIVATE["questions"], "studies": VQA_PRIVATE["studies"]}
    assert known["questions"] == 4 and not known["matches"]  # 4 of 41,007: not the challenge's set


def test_category_spellings():
    assert category("presence_assessment") == "Presence Assessment"
    assert category("GEOMETRIC INFORMATION ASSESSMENT") == "Geometric Information Assessment"
    assert category("Lung and Pleural Opacity") is None and category(None) is None


@pytest.mark.parametrize(("changes", "message"), [
    ({"task_name": "Anatomy"}, "question q1: task_name 'Anatomy' is none of the five categories"),
    ({"options": ["A. x"]}, "question q1: expected a list of options"),
    ({"options": ["A. x", "B) y", "x"]}, "question q1: option 'x' is not `<letter>. <text>`"),
    ({"correct_answer": "E"}, "question q1: correct_answer 'E' is not one of its options"),
    ({"question": " "}, "question q1: no question text"),
])
def test_a_bad_record_is_one_line_naming_it_and_exit_2(tmp_path, capsys, changes, message):
    source = download(tmp_path, test={"q0": record(0), "q1": record(1, **changes)})
    assert main(["build-dataset", NAME, "--source", str(source), "--out", str(tmp_path / "built")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "built").exists()  # nothing half-written


def test_a_missing_split_and_a_foreign_file_are_refused(tmp_path, capsys):
    source = download(tmp_path)
    assert main(["build-dataset", NAME, "--source", str(source), "--split", "train", "--out", str(tmp_path / "o")]) == 2
    assert "no train file among the sources (found: test, valid)" in capsys.readouterr().err
    other = tmp_path / "answers.json"
    other.write_text("{}")
    assert main(["build-dataset", NAME, "--source", str(other), "--out", str(tmp_path / "o")]) == 2
    assert "expected ReXVQA's metadata file, <split>_vqa_data.json" in capsys.readouterr().err


def test_unanswered_questions_build_and_are_noted(tmp_path, capsys):
    source = download(tmp_path, test={"q0": record(0), "q1": record(1, correct_answer=None)})
    assert main(["build-dataset", NAME, "--source", str(source), "--out", str(tmp_path / "built")]) == 0
    assert "1 question(s) without correct_answer: they cannot be scored" in capsys.readouterr().err
    assert BUILDERS[NAME] is BUILDER
