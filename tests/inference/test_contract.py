"""The code-submission contract (rexrank.inference.contract) and a pull request's model/ under the submission
rules: what is accepted, and each way a hostile or careless folder is refused, by name."""

import json

import pytest
from fixtures.submissions import BASE, SID, card_json, write

from rexrank.errors import InputError
from rexrank.inference.contract import check_model, cli_of, read_card
from rexrank.rules import SubmissionRejected, check_submission

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CARD = {"weights": [{"repo": "lab/model", "revision": COMMIT}], "tasks": ["findings"], "images": "multi",
        "gpu_memory_gb": 24}


def model_files(**card) -> dict[str, bytes]:
    return {f"{BASE}/model/model.yaml": json.dumps(CARD | card).encode(),
            f"{BASE}/model/inference.py": b"import argparse\nparser = argparse.ArgumentParser()\n"
                                          b"parser.add_argument('--input_json_file')\n",
            f"{BASE}/model/requirements.txt": b"transformers==4.47.0\n",
            f"{BASE}/model/llava/utils.py": b"print('a module of its own')\n"}


def test_a_code_submission_is_accepted_with_its_card_and_nothing_else(tmp_path):
    checked = check_submission(write(tmp_path, model_files() | {f"{BASE}/submission.json": card_json()}), SID)
    assert checked.model is not None and checked.model.weights[0].revision == COMMIT
    assert checked.model.cli == "flags" and checked.model.tasks == ("findings",) and checked.model.gpu_memory_gb == 24
    assert checked.model.command("/input/i.json", "/output/o.json", "/images/")[:2] == ["python",
                                                                                         "/submission/inference.py"]


@pytest.mark.parametrize(("files", "said"), [
    ({f"{BASE}/model/weights.bin": b"\x00\x01"}, "model/ holds code and text configs"),
    ({f"{BASE}/model/notes.py": b"\xff\xfe binary"}, "not UTF-8 text"),
    ({f"{BASE}/model/a/b/c/d/e/f/g/h/i.py": b"x"}, "deeper than 8 folders"),
    ({f"{BASE}/model/model.yaml": b"weights: [{repo: lab/model, revision: main}]\ntasks: [findings]\n"
                                  b"gpu_memory_gb: 24\n"}, "is not a 40-hex commit"),
    ({f"{BASE}/model/model.yaml": b"!!python/object/apply:os.system ['id']\n"}, "not YAML"),
    ({f"{BASE}/model/model.yaml": json.dumps(CARD | {"tasks": ["everything"]}).encode()}, "tasks: a list of"),
    ({f"{BASE}/model/model.yaml": json.dumps(CARD | {"gpu_memory_gb": 400}).encode()}, "gpu_memory_gb"),
    ({f"{BASE}/model/model.yaml": json.dumps(CARD | {"weights": [{"repo": "../../etc", "revision": COMMIT}]})
      .encode()}, "is not a Hub repo id"),
    ({f"{BASE}/model/model.yaml": json.dumps(CARD | {"extra": 1}).encode()}, "unknown field 'extra'"),
])
def test_a_hostile_or_careless_model_folder_is_refused_naming_the_file(tmp_path, files, said):
    with pytest.raises(SubmissionRejected, match=said):
        check_submission(write(tmp_path, model_files() | files | {f"{BASE}/submission.json": card_json()}), SID)


def test_the_folder_is_carried_whole_and_a_script_or_environment_is_needed(tmp_path):
    without_card = {k: v for k, v in model_files().items() if not k.endswith("model.yaml")}
    with pytest.raises(SubmissionRejected, match="without model.yaml"):
        check_submission(write(tmp_path / "a", without_card | {f"{BASE}/submission.json": card_json()}), SID)
    without_script = {k: v for k, v in model_files().items() if not k.endswith("inference.py")}
    with pytest.raises(SubmissionRejected, match="no inference.py"):
        check_submission(write(tmp_path / "b", without_script | {f"{BASE}/submission.json": card_json()}), SID)
    runner = {f"{BASE}/model/model.yaml": json.dumps(CARD | {"runner": "transformers"}).encode()}
    checked = check_submission(write(tmp_path / "c", runner | {f"{BASE}/submission.json": card_json()}), SID)
    assert checked.model.uses_rexrank_runner and checked.model.command("i", "o", "r")[1:3] == [
        "-m", "rexrank.inference.hf_runner"]


def test_a_link_in_the_folder_is_refused(tmp_path):
    folder = tmp_path / "model"
    write(folder, {"model.yaml": json.dumps(CARD).encode(), "inference.py": b"x", "requirements.txt": b""})
    (folder / "secrets.txt").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="secrets.txt: a link"):
        check_model(folder)


def test_the_cli_form_is_read_from_the_script_unless_named(tmp_path):
    positional = tmp_path / "inference.py"
    positional.write_text("import sys\ninput_json, output_json, root = sys.argv[1:4]\n")
    assert cli_of(positional) == "positional"
    assert read_card(json.dumps(CARD).encode(), tmp_path).cli == "positional"
    assert read_card(json.dumps(CARD | {"cli": "flags"}).encode(), tmp_path).cli == "flags"
