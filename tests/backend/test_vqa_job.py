"""A code submission that serves VQA, the whole way on the fake Hub: `rexrank submit --model`, the review, and the
inference job's stages in the sandbox on the synthetic ReXVQA questions (src/rexrank/demo/rexvqa): the public
split's result and per-question table committed as generated, the private questions' aggregates only, rounded, the
ledger's records, the merge under the rules. The private questions carry a canary, which must appear nowhere."""

import json
import re
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from fixtures.code_submissions import READ_INPUT
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.backend.inference import MAINTAINERS_LOG, PRIVATE_FAILED
from rexrank.catalog import TEST_SETS, VQA_CATEGORIES
from rexrank.cli import main
from rexrank.data.build import Build, push_dataset, write_dataset
from rexrank.results import BOARD_DECIMALS
from rexrank.rules import ledger
from rexrank.rules.layout import VQA_PRIVATE_SPLIT
from rexrank.scorers.rexvqa_accuracy import extract, options_of

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)"),
    pytest.mark.subprocess, pytest.mark.slow,  # each test builds an environment and runs the sandbox
]
DEMO = Path(__file__).resolve().parents[2] / "src" / "rexrank" / "demo" / "rexvqa"
REPO = "rexrank/results"
REVISION = "b" * 40
CANARY = "ZQX-VQA-CANARY-7301"
SUBMISSION = "vqa-lab-vqa-answerer"
REPORT_STUDIES = [f"iu{i}" for i in range(10)]

# Deterministic, from the question's text alone: a letter chosen by a sum of its characters (spread over the
# options, so no letter is most of them), written as a chat model writes it; a report for a report study.
SCRIPT = READ_INPUT + """
private = any(key.startswith("p-") for key in data)
for key, record in data.items():
    if "question" in record:
        for path in record["image_path"]:
            open(args.img_root_dir + path, "rb").read()
        letter = "ABCD"[sum(map(ord, record["question"])) % len(record["options"])]
        record["model_prediction"] = f"The answer is {letter}."
        if private and open("/submission/fail.txt").read().strip() == "fail":
            print("LEAK" + "ED:", record["question"])
            sys.exit(137)  # a number it chose after seeing a private question
    else:
        record["model_prediction"] = f"The lungs are clear in study {key}."
json.dump(data, open(args.save_json_file, "w"))
"""


def answered(question: str, options: list[str]) -> str:
    return "ABCD"[sum(map(ord, question)) % len(options)]


def private_questions(folder: Path) -> Path:
    """The demo's questions as a private set: other ids, a canary in each question."""
    demo = json.loads((DEMO / "metadata" / "test_vqa_data.json").read_text())
    private = {f"p-{qid}": record | {"question": f"{record['question']} {CANARY}"} for qid, record in demo.items()}
    (folder / "metadata").mkdir(parents=True)
    (folder / "metadata" / "private_vqa_data.json").write_text(json.dumps(private))
    return folder


def write_images(root: Path, questions: dict) -> Path:
    for record in questions.values():
        for path in record["ImagePath"]:
            target = root / path.removeprefix("../")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"synthetic image " + path.encode())
    return root


def write_model(folder: Path, serves: list[str], tasks: list[str] | None = None) -> Path:
    folder.mkdir()
    card = {"weights": [{"repo": "lab/vqa-model", "revision": REVISION}], "serves": serves, "images": "multi",
            "gpu_memory_gb": 20} | ({"tasks": tasks} if tasks else {})
    (folder / "model.yaml").write_text(json.dumps(card))
    (folder / "requirements.txt").write_text("numpy\n")
    (folder / "inference.py").write_text(textwrap.dedent(SCRIPT))
    (folder / "fail.txt").write_text("never\n")
    return folder


@pytest.fixture
def world(fake_hub, tmp_path, monkeypatch):
    """The public questions built (a folder), the private ones pushed as a private dataset, their images, a report
    set and the private report references (for a model that serves both), the weights repo."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert main(["build-dataset", "rexvqa", "--source", str(DEMO), "--out", str(tmp_path / "vqa-public")]) == 0
    assert main(["build-dataset", "rexvqa", "--source", str(private_questions(tmp_path / "vqa-src")), "--split",
                 "private", "--out", str(tmp_path / "vqa-private")]) == 0
    push_dataset(tmp_path / "vqa-private", "gated/rexvqa-private")
    write_images(tmp_path / "images", json.loads((DEMO / "metadata" / "test_vqa_data.json").read_text()))
    for study in REPORT_STUDIES:
        (tmp_path / "images" / study).mkdir()
        (tmp_path / "images" / study / "0.png").write_bytes(b"synthetic image")
    (tmp_path / "iu.jsonl").write_text("".join(json.dumps({"study_id": s, "findings": "Synthetic public finding.",
                                                           "impression": "None.", "image_paths": [f"{s}/0.png"]})
                                               + "\n" for s in REPORT_STUDIES))
    studies = pd.DataFrame({"study_id": [f"g{i}" for i in range(10)], "findings": ["Synthetic finding."] * 10,
                            "impression": ["Synthetic impression."] * 10,
                            "image_paths": [[f"iu{i}/0.png"] for i in range(10)]})
    push_dataset(write_dataset(Build(TEST_SETS["rexgradient"].info, "test", studies), tmp_path / "refs"),
                 "gated/rexgradient")
    HfApi().create_repo(REPO, repo_type="dataset")
    fake_hub.add_repo("lab/vqa-model", {"config.json": b"{}"}, sha=REVISION)
    return fake_hub


def submit(tmp_path, monkeypatch, serves, tasks=None):
    model = write_model(tmp_path / "model", serves, tasks)
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--model", str(model), "--name", "VQA Answerer", "--institution", "VQA Lab",
                 "--repo", REPO]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["review", "--hub", REPO, "--pr", "1"]) == 0


def infer(tmp_path, *extra):
    return backend(["infer", "--hub", REPO, "--pr", "1", "--work", str(tmp_path / "job"), "--metrics", "bleu2",
                    "--smoke", f"iu-xray={tmp_path / 'iu.jsonl'},{tmp_path / 'images'}",
                    "--public", f"rexvqa={tmp_path / 'vqa-public'},{tmp_path / 'images'}",
                    "--references", "gated/rexgradient", "--private-images", str(tmp_path / "images"),
                    "--vqa-private", "gated/rexvqa-private", *extra])


def seen(markdown: str) -> str:
    """A comment as its reader sees it (rendered, tags dropped)."""
    import html

    from rendered import html as rendered

    return html.unescape(re.sub(r"<[^>]+>", "", rendered(markdown)))


def pr_files(hub):
    return hub.files(REPO, repo_type="dataset", revision="refs/pr/1")


def comments(hub):
    return [t for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"]


def everything(hub) -> str:
    refs = ["main"] + [f"refs/pr/{pr.num}" for pr in hub.pull_requests(REPO, repo_type="dataset")]
    files = [d for r in refs for p, d in hub.files(REPO, repo_type="dataset", revision=r).items()
             if "rexvqa-private" not in p]
    return b"".join(files).decode("utf-8", "replace") + "".join(comments(hub))


def by_hand(questions: dict) -> dict[str, tuple[int, int]]:
    """category -> (questions, correct) of the script's answers, read by the answer rule."""
    counts = {}
    for record in questions.values():
        category = record["task_name"].replace("_", " ").title().replace("And", "and")
        reading = extract(f"The answer is {answered(record['question'], record['options'])}.",
                          options_of(record["options"]))
        n, right = counts.get(category, (0, 0))
        counts[category] = (n + 1, right + (reading.letter == record["correct_answer"]))
    counts["overall"] = tuple(map(sum, zip(*counts.values())))
    return counts


def test_a_vqa_only_submission_runs_vqa_public_and_private_and_no_report_stage(world, tmp_path, monkeypatch, capsys):
    submit(tmp_path, monkeypatch, ["VQA"])
    capsys.readouterr()
    assert infer(tmp_path) == 0, capsys.readouterr().err
    printed = capsys.readouterr()
    assert "2 result(s) published" in printed.out and CANARY not in printed.out + printed.err
    files = pr_files(world)
    folder = f"submissions/{SUBMISSION}"
    assert not [p for p in files if p.startswith(f"{folder}/results/")]  # no report stage ran
    smoke = seen(next(t for t in comments(world) if t.startswith("**rexrank inference**")))
    assert "on 8 rexvqa questions" in smoke  # smoke-tested on the track it serves, not on iu-xray
    public = json.loads(files[f"{folder}/vqa/rexvqa.vqa.test.json"])
    demo = json.loads((DEMO / "metadata" / "test_vqa_data.json").read_text())
    hand = by_hand(demo)
    rows = {r["category"]: r for r in public["rows"]}
    assert set(rows) == {*VQA_CATEGORIES, "overall"} & set(hand)
    for category, (n, right) in hand.items():
        assert (rows[category]["questions"], rows[category]["correct"]) == (n, right)
        assert rows[category]["accuracy"] == right / n and rows[category]["failed_extractions"] == 0
    assert public["provenance"] == "generated" and public["model"] == "VQA Answerer"
    table = pd.read_parquet(__import__("io").BytesIO(files[f"{folder}/vqa/rexvqa.vqa.test.per_question.parquet"]))
    assert sorted(table["question_id"]) == sorted(demo) and int(table["correct"].sum()) == hand["overall"][1]
    private = json.loads(files[f"{folder}/vqa/rexvqa.vqa.private.json"])
    assert private["per_question"] is None and f"{folder}/vqa/rexvqa.vqa.private.per_question.parquet" not in files
    overall = {r["category"]: r for r in private["rows"]}["overall"]
    n, right = hand["overall"]  # the private questions are the demo's: the same answers
    assert overall["accuracy"] == round(right / n, BOARD_DECIMALS) and "correct" not in overall
    assert all(round(r[k], BOARD_DECIMALS) == r[k] for r in private["rows"] for k in ("accuracy", "low", "high"))
    last = comments(world)[-1]
    assert "private questions" in last and f"{round(right / n, BOARD_DECIMALS):.3f}" in last
    main_files = world.files(REPO, repo_type="dataset")
    record = json.loads(main_files[f"{ledger.SUBMISSIONS}/{SUBMISSION}.json"])
    assert record["results"]["rexvqa.vqa.test"]["job"] == "inference"
    assert record["results"]["rexvqa.vqa.private"]["job"] == "private"
    [scoring] = [json.loads(d) for p, d in main_files.items() if p.startswith(f"{ledger.PRIVATE}/")]
    assert scoring["task"] == "vqa" and scoring["questions"] == n
    assert all(re.fullmatch(r"[0-9a-f]{16}", d) for d in scoring["digests"].values())  # never the letters
    assert CANARY not in everything(world)
    assert [p for p in (tmp_path / "job").rglob("*") if p.is_file() and "private" in p.as_posix()] == []
    assert backend(["merge", "--hub", REPO, "--pr", "1"]) == 0  # the rules accept the job's files on main
    assert f"{folder}/vqa/rexvqa.vqa.private.json" in world.files(REPO, repo_type="dataset")


def test_a_failing_private_vqa_run_says_only_the_fixed_sentence(world, tmp_path, monkeypatch, capsys):
    submit(tmp_path, monkeypatch, ["VQA"])
    HfApi().upload_file(path_or_fileobj=b"fail\n", path_in_repo=f"submissions/{SUBMISSION}/model/fail.txt",
                        repo_id=REPO, repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    assert backend(["review", "--hub", REPO, "--pr", "1"]) == 0
    capsys.readouterr()
    assert infer(tmp_path) == 2
    assert seen(comments(world)[-1]) == seen(f"**rexrank inference**: stopped at the private stage: {PRIVATE_FAILED}")
    printed = capsys.readouterr()
    for text in ("".join(comments(world)), printed.out + printed.err):
        assert not re.search(r"\b137\b", text) and "LEAKED:" not in text and CANARY not in text
    assert "exited with code 137" in (tmp_path / "job" / MAINTAINERS_LOG).read_text()
    files = pr_files(world)
    assert f"submissions/{SUBMISSION}/vqa/rexvqa.vqa.test.json" in files  # the public stage had finished
    assert f"submissions/{SUBMISSION}/vqa/rexvqa.vqa.private.json" not in files
    assert [p for p in (tmp_path / "job").rglob("*") if p.is_file() and b"LEAKED:" in p.read_bytes()] == []


def test_a_submission_serving_rrg_and_vqa_runs_both(world, tmp_path, monkeypatch, capsys):
    submit(tmp_path, monkeypatch, ["RRG", "VQA"], ["findings"])
    capsys.readouterr()
    assert infer(tmp_path, "--public", f"iu-xray={tmp_path / 'iu.jsonl'},{tmp_path / 'images'}") == 0, \
        capsys.readouterr().err
    files = pr_files(world)
    folder = f"submissions/{SUBMISSION}"
    for path in ("results/iu-xray.findings.json", "results/rexgradient.findings.json", "vqa/rexvqa.vqa.test.json",
                 "vqa/rexvqa.vqa.private.json"):
        assert f"{folder}/{path}" in files, path
    smoke = seen(next(t for t in comments(world) if t.startswith("**rexrank inference**")))
    assert "on 8 iu-xray studies" in smoke  # the report track's smoke set, as before
    assert backend(["merge", "--hub", REPO, "--pr", "1"]) == 0


def test_a_synthetic_vqa_model_from_submit_to_the_board(world, tmp_path, monkeypatch, capsys):
    """Issue 47's closing note: `rexrank submit --model`, the review, the inference job (public split and private
    questions), the merge and the aggregate job; then the board's VQA rows, read from the results repo on the Hub, hold
    the model's public row with its CIs and its private aggregates, ranked beside ReXrank's published figures."""
    from rexrank.board.views import ci_column
    from rexrank.board.vqa import OVERALL, official_rows, read_vqa, splits, vqa_table

    submit(tmp_path, monkeypatch, ["VQA"])
    assert infer(tmp_path) == 0, capsys.readouterr().err
    assert backend(["merge", "--hub", REPO, "--pr", "1"]) == 0
    assert backend(["aggregate", "--hub", REPO]) == 0, capsys.readouterr().err
    frame = read_vqa(REPO)
    assert frame.attrs["unreadable"] == []
    published = official_rows()
    assert len(frame[frame["provenance"] == "imported"]) == len(published)  # beside ReXrank's figures, all of them
    mine = frame[frame["submission"] == SUBMISSION].set_index("split")
    demo = json.loads((DEMO / "metadata" / "test_vqa_data.json").read_text())
    n, right = by_hand(demo)["overall"]
    public_split = next(s for _, s in splits(frame) if s != VQA_PRIVATE_SPLIT)
    assert set(mine.index) == {public_split, VQA_PRIVATE_SPLIT} and set(mine["provenance"]) == {"generated"}
    row = mine.loc[public_split]
    assert row[OVERALL] == right / n and row[f"{OVERALL}_low"] <= row[OVERALL] <= row[f"{OVERALL}_high"]
    assert row[f"{OVERALL}_low"] < row[f"{OVERALL}_high"]  # a CI, not a bare figure
    assert mine.loc[VQA_PRIVATE_SPLIT, OVERALL] == round(right / n, BOARD_DECIMALS)  # the private aggregates only
    assert mine.loc[VQA_PRIVATE_SPLIT, "questions"] == n == row["questions"]
    # the tab's tables: the public split holds the model alone, with its CI; the private set ranks it among ReXrank's
    shown = vqa_table(frame, public_split)
    assert shown["Model"].tolist() == ["VQA Answerer"] and shown["Rank"].tolist() == ["1"]
    [cell] = ci_column([(row[OVERALL], row[f"{OVERALL}_low"], row[f"{OVERALL}_high"])])
    assert shown["Overall"].tolist() == [cell] and f"{right / n:.{BOARD_DECIMALS}f}" in cell
    ranked = vqa_table(frame, VQA_PRIVATE_SPLIT)
    assert len(ranked) == len(published) + 1 and "VQA Answerer" in ranked["Model"].tolist()
    mine_rank = int(ranked.set_index("Model").loc["VQA Answerer", "Rank"])
    better = [r for r in published if r[OVERALL] > mine.loc[VQA_PRIVATE_SPLIT, OVERALL]]
    assert mine_rank == len(better) + 1
    assert CANARY not in frame.to_string() + everything(world)
