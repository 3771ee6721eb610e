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


# A billion laughs in 1 KB: each level's list holds the one before nine times (9^9 nodes when walked), under a field
# a message repr()s.
ALIAS_BOMB = b"".join(b"l%d: &l%d [%s]\n" % (i, i, b",".join([b"*l%d" % (i - 1)] * 9) if i else b"x,x,x,x,x,x,x,x,x")
                      for i in range(10)) + b"runner: *l9\ntasks: [findings]\ngpu_memory_gb: 8\n"
DEEP = b"weights: " + b"[" * 20000 + b"]" * 20000 + b"\ntasks: [findings]\ngpu_memory_gb: 8\n"


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize(("bomb", "said"), [(ALIAS_BOMB, "an alias"), (DEEP, "deeper than 16 levels")])
def test_a_yaml_bomb_is_one_line_through_every_door_at_a_bounded_cost(tmp_path, bomb, said):
    """`rexrank submit --model --dry-run`, `rexrank infer` and the review's rules each read model.yaml: each refuses
    the bomb in one line, naming the file and the rule, in a child whose peak memory is measured (before the loader's
    limits, the alias bomb hung or ran out of memory, the deep one ended in RecursionError)."""
    import subprocess
    import sys
    import textwrap

    assert len(ALIAS_BOMB) < 1024
    folder = tmp_path / "model"
    write(folder, {"model.yaml": bomb, "inference.py": b"print('x')\n", "requirements.txt": b""})
    write(tmp_path / "pr", {f"{BASE}/model/{k}": v for k, v in
                            {"model.yaml": bomb, "inference.py": b"x\n", "requirements.txt": b""}.items()}
          | {f"{BASE}/submission.json": card_json()})
    child = textwrap.dedent(f"""
        import contextlib, io, resource, sys
        from rexrank.cli import main
        from rexrank.rules import SubmissionRejected, check_submission
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for argv in (["submit", "--model", {str(folder)!r}, "--name", "M", "--institution", "L", "--dry-run"],
                     ["infer", "--submission", {str(folder)!r}, "--dataset", "x.jsonl", "--image-root", ".",
                      "--out", "p.jsonl"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(argv)
            print(code, err.getvalue().strip().replace(chr(10), " | "))
        try:
            check_submission({str(tmp_path / "pr")!r}, {SID!r})
        except SubmissionRejected as rejected:
            print("rules", rejected.problems)
        print("grew", (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 4, done.stderr[-2000:]
    for line in lines[:2]:
        assert line.startswith("2 ") and "model.yaml" in line and said in line and "Traceback" not in line
    assert said in lines[2]
    assert int(lines[3].split()[1]) < 32  # MiB over the child's peak before any was read
