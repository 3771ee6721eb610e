"""A code submission declares the tracks it serves in ReXrank's words (model.yaml `serves`: RRG, VQA or both), beside
rexrank's report tasks; the VQA input the model gets is its questions without their answers, staged and bounded as a
report run's."""

import json

import pytest

from rexrank.catalog import VQA_TASK
from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.inference.contract import RRG, VQA, VQA_RUN, read_card
from rexrank.inference.inputs import question_records
from rexrank.inference.runner import MAX_PREDICTION, MAX_VQA_ANSWER, RECORD_BYTES, choose_task
from rexrank.vqa.dataset import load_questions

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CARD = {"weights": [{"repo": "lab/model", "revision": COMMIT}], "images": "multi", "gpu_memory_gb": 24}


def card(tmp_path, **fields):
    return read_card(json.dumps(CARD | fields).encode(), tmp_path)


def test_a_card_without_serves_is_rrg_as_every_card_before_it(tmp_path):
    model = card(tmp_path, tasks=["findings"])
    assert model.serves == (RRG,) and not model.vqa and model.runs == ("findings",) and model.private_load == 1


@pytest.mark.parametrize(("fields", "serves", "runs"), [
    ({"serves": ["VQA"]}, (VQA,), (VQA_TASK,)),
    ({"serves": "VQA", "tasks": []}, (VQA,), (VQA_TASK,)),
    ({"serves": ["VQA", "RRG"], "tasks": ["findings"]}, (RRG, VQA), ("findings", VQA_TASK)),
    ({"serves": ["RRG"], "tasks": ["findings", "findings_impression"]}, (RRG,), ("findings", "findings_impression")),
])
def test_the_tracks_it_serves_decide_what_it_runs(tmp_path, fields, serves, runs):
    model = card(tmp_path, **fields)
    assert model.serves == serves and model.runs == runs
    assert model.private_load == len(model.tasks) + (VQA_RUN if VQA in serves else 0)
    assert choose_task(model, runs[-1]) == runs[-1]
    if len(runs) == 1:
        assert choose_task(model, None) == runs[0]


@pytest.mark.parametrize(("fields", "said"), [
    ({"serves": ["vqa!"]}, "serves: "),
    ({"serves": []}, "serves: "),
    ({"serves": ["VQA", "VQA"]}, "serves: "),
    ({"serves": ["VQA"], "tasks": ["findings"]}, "tasks: report tasks, but serves says VQA only"),
    ({"serves": ["RRG", "VQA"]}, "tasks: a list of"),
    ({"serves": ["VQA"], "runner": "transformers"}, "rexrank's runners write reports"),
])
def test_a_bad_declaration_is_refused_naming_the_field(tmp_path, fields, said):
    with pytest.raises(InputError, match=said.replace("(", r"\(")):
        card(tmp_path, **fields)


def test_a_bad_declaration_is_one_line_and_exit_2_at_the_command_line(tmp_path, capsys):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.yaml").write_text(json.dumps(CARD | {"serves": ["VQA", "CT"]}))
    (folder / "inference.py").write_text("print('--input_json_file')\n")
    (folder / "requirements.txt").write_text("numpy\n")
    assert main(["infer", "--submission", str(folder), "--dataset", str(tmp_path), "--image-root", str(tmp_path),
                 "--out", str(tmp_path / "p.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if "serves" in line]
    assert "model.yaml: serves: \"['VQA', 'CT']\"" in line and "RRG, VQA or both" in line


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "src" / "rexrank" / "demo" / "rexvqa"
    out = tmp_path_factory.mktemp("vqa") / "rexvqa"
    assert main(["build-dataset", "rexvqa", "--source", str(demo), "--out", str(out)]) == 0
    return load_questions(out)[0]


def test_the_vqa_input_is_keyed_by_question_and_holds_no_answer(questions):
    records = question_records(questions, "test")
    assert list(records) == questions["question_id"].tolist()
    first = questions.iloc[0]
    record = records[first["question_id"]]
    assert set(record) == {"question", "options", "image_path", "key_image_path", "study_id", "split"}
    assert record["question"] == first["question"] and record["options"] == list(first["options"])
    assert record["study_id"] == first["study_id"] and record["split"] == "test"
    # ReXVQA's metadata names images from its metadata/ folder (../deid_png/...): under the image root here
    assert first["image_paths"][0].startswith("../") and record["image_path"][0] == first["image_paths"][0][3:]
    assert record["key_image_path"] == record["image_path"][0]
    text = json.dumps(records)
    assert "correct_answer" not in text and first["category"] not in text


def test_a_question_whose_image_leaves_the_root_is_refused(questions):
    hostile = questions.copy()
    hostile.at[0, "image_paths"] = ["deid_png/../../../etc/passwd"]
    with pytest.raises(InputError, match="leaves the image folder"):
        question_records(hostile, "test")


def test_a_vqa_answer_is_bounded_below_a_report_and_its_record_fits_the_save_file_reader():
    # a 256-token answer (ReXrank's MedGemma example) is about 1.2 KB; the bound is several times that, far under a
    # report's, and a record echoing it fully escaped beside its question fits the reader's record bound
    assert 1200 * 3 < MAX_VQA_ANSWER < MAX_PREDICTION
    assert 6 * MAX_VQA_ANSWER + 64 * 1024 < RECORD_BYTES


def test_the_save_file_reader_holds_a_vqa_answer_to_its_bound(tmp_path):
    from rexrank.inference.runner import InferenceFailed, read_save

    save = tmp_path / "save.json"
    save.write_text(json.dumps({"q1": {"model_prediction": "B"}, "q2": {"model_prediction": "x" * MAX_VQA_ANSWER}}))
    assert read_save(save, ["q1", "q2"], 1 << 20, MAX_VQA_ANSWER) == {"q1": "B", "q2": "x" * MAX_VQA_ANSWER}
    save.write_text(json.dumps({"q1": {"model_prediction": "B"},
                                "q2": {"model_prediction": "x" * (MAX_VQA_ANSWER + 1)}}))
    with pytest.raises(InferenceFailed, match=f"1 predictions over {MAX_VQA_ANSWER:,} bytes"):
        read_save(save, ["q1", "q2"], 1 << 20, MAX_VQA_ANSWER)
