"""RadRBench-CXR in the results repo: `submissions/<id>/radrbench/radrbench-cxr.accuracy.json` (what
`rexrank score-radrbench` writes) collected by `rexrank submit`, held to the security rules, and aggregated into
`radrbench.parquet` (the results repo's `radrbench` config)."""

import json

import datasets
import pandas as pd
import pytest
from fixtures.board import results_repo
from fixtures.submissions import BASE, SID, clean_files, refused, touched, write

from rexrank.backend.__main__ import main as backend
from rexrank.board.aggregate import aggregate
from rexrank.board.schema import RADRBENCH_COLUMNS
from rexrank.cli import main
from rexrank.demo import radrbench as rdemo
from rexrank.rules import Touched, check_radrbench, check_submission

PATH = f"{BASE}/radrbench/radrbench-cxr.accuracy.json"


@pytest.fixture(scope="module")
def demo_dataset(tmp_path_factory):
    return rdemo.dataset(tmp_path_factory.mktemp("radrbench") / "radrbench-cxr")


def score_radrbench(out, dataset, model="demo-reasoner"):
    assert main(["score-radrbench", "--predictions", str(rdemo.output_file(model)), "--dataset", str(dataset),
                 "--out", str(out), "--model-name", rdemo.MODELS[model]["name"], "--resamples", "200"]) == 0
    return out


def accuracy_json(tmp_path, dataset, edit=None) -> bytes:
    path = score_radrbench(tmp_path / "scored", dataset) / "radrbench-cxr.accuracy.json"
    value = json.loads(path.read_text())
    if edit:
        edit(value)
    return json.dumps(value).encode()


# -- submit ---------------------------------------------------------------------------------------------------------

def test_submit_collects_the_radrbench_result_alone(tmp_path, demo_dataset, capsys):
    results = score_radrbench(tmp_path / "results", demo_dataset)
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "Reasoner", "--institution", "Demo Lab",
                 "--repo", "org/results", "--dry-run"]) == 0
    files, plan = capsys.readouterr().out.split("on the board:\n")
    listed = [line.split()[0] for line in files.splitlines() if line.startswith("  ")]
    assert listed == ["submissions/demo-lab-reasoner/radrbench/radrbench-cxr.accuracy.json",
                      "submissions/demo-lab-reasoner/submission.json"]
    assert plan.splitlines()[:2] == ["  radrbench/radrbench-cxr.accuracy.json:",
                                     "    RadRBench-CXR accuracy, shown on its tab as rexrank score-radrbench wrote it "
                                     "(checked by the rules, not re-scored)"]


@pytest.mark.slow
def test_submit_finds_it_in_a_radrbench_subfolder_beside_report_results(tmp_path, demo_dataset, capsys):
    from fixtures.submissions import score

    results = score(tmp_path / "results")
    score_radrbench(results / "radrbench", demo_dataset)
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "Both", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "submissions/both/radrbench/radrbench-cxr.accuracy.json" in out
    assert "submissions/both/results/mimic-cxr.findings.json" in out


@pytest.mark.slow
def test_a_stale_or_tampered_radrbench_result_is_not_submitted(tmp_path, demo_dataset, capsys):
    results = score_radrbench(tmp_path / "stale", demo_dataset)
    path = results / "radrbench-cxr.accuracy.json"
    path.write_text(path.read_text().replace("parser:answers-v1", "parser:answers-v0"))
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 2
    assert ("made as radrbench-accuracy:1|parser:answers-v0|unreadable:wrong|overall:option-tasks, this rexrank scores "
            "as") in capsys.readouterr().err
    value = json.loads(path.read_text().replace("answers-v0", "answers-v1"))
    value["rows"][-1]["accuracy"] = 1.0
    path.write_text(json.dumps(value))
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 2
    assert "rows[13]: accuracy 1.0 is not correct / items" in capsys.readouterr().err
    score_radrbench(results / "radrbench", demo_dataset)
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 2
    assert "radrbench-cxr.accuracy.json: both" in capsys.readouterr().err


# -- security -------------------------------------------------------------------------------------------------------

def test_the_security_rules_accept_exactly_that_path(tmp_path, demo_dataset):
    data = accuracy_json(tmp_path, demo_dataset)
    files = clean_files() | {PATH: data}
    checked = check_submission(write(tmp_path / "repo", files), SID)
    assert checked.radrbench["model"] == "Demo-Reasoner"
    assert checked.radrbench["rows"][-1]["items"] == 22  # the option tasks' items
    only = {f"{BASE}/submission.json": files[f"{BASE}/submission.json"], PATH: data}
    assert check_submission(touched(only), SID).paths == tuple(only)  # RadRBench alone is a submission
    for wrong in ("radrbench/accuracy.json", "radrbench/radrbench-cxr.per_item.parquet", "radrbench-cxr.accuracy.json",
                  "radrbench/RADRBENCH-CXR.accuracy.json", "results/radrbench-cxr.radrbench.json"):
        err = refused([*touched(only), Touched(f"{BASE}/{wrong}", 10)], SID)
        assert f"{BASE}/{wrong}: " in str(err)
    assert "maintainers only" in str(refused([Touched("radrbench.parquet", 10)], SID))
    assert "more than the 1048576 allowed for radrbench" in str(refused([Touched(PATH, 1024 * 1024 + 1)], SID))


def drop(key):
    return lambda v: v.pop(key)


def set_row(index, **fields):
    return lambda v: v["rows"][index].update(fields)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda v: v.update(extra=1), "unknown field(s) extra"),
    (drop("rows"), "missing rows"),
    (lambda v: v.update(dataset="mimic-cxr"), "dataset 'mimic-cxr', expected radrbench-cxr"),
    (lambda v: v.update(model="x" * 101), "model: expected text of 1 to 100 characters"),
    (lambda v: v.update(signature="bleu2:1"), "signature: expected a radrbench-accuracy signature"),
    (lambda v: v.update(missing_outputs=-1), "missing_outputs: expected a whole number"),
    (lambda v: v.update(rows=[]), "rows: expected a list of 1 to 200 rows"),
    (lambda v: v.update(rows=v["rows"] * 30), "rows: expected a list of 1 to 200 rows"),
    (set_row(0, items=0), "rows[0]: items is not a positive whole number"),
    (set_row(0, correct=5), "rows[0]: correct is not a whole number from 0 to items"),
    (set_row(0, accuracy=True), "accuracy, low and high must be numbers from 0 to 1"),
    (set_row(0, high=1.5), "accuracy, low and high must be numbers from 0 to 1"),
    (set_row(13, low=0.96), f"rows[13]: accuracy {21 / 22} is outside its CI [0.96, "),
    (set_row(4, accuracy=0.5, low=0.0, high=1.0), "rows[4]: accuracy 0.5 is not correct / items"),
    (set_row(0, source="<b>x</b>"), "rows[0]: source '<b>x</b>' is not a lower-case name"),
    (set_row(0, task="vqa"), "rows[0]: task 'vqa' is not one of binary"),
    (set_row(0, failures='{"x": -1}'), "rows[0]: failures is not a JSON object of answer failure -> count"),
    (set_row(0, failures={"x": 1}), "rows[0]: failures is not a JSON object"),
    (set_row(0, bonus=1), "rows[0]: unknown field(s) bonus"),
    (lambda v: v["rows"].pop(), "rows: expected one row with source and task all"),
    (lambda v: v["rows"].append(dict(v["rows"][0])), "rows: a (source, task) appears more than once"),
    (set_row(13, items=30, scored=30, correct=23, accuracy=23 / 30, low=0.6, high=0.9),
     "the all row's items is not the sum"),
    # the authors' answer rule leaves unread answers out of the denominator: not the board's figure
    (set_row(13, scored=20, accuracy=23 / 20), "rows[13]: scored 20 of 22 items: the board's answer rule scores every"),
    (lambda v: v.update(signature=v["signature"].replace("parser:answers-v1|unreadable:wrong",
                                                         "parser:chestx-reasoner:ours@9a8a00d|unreadable:left-out")),
     "signature: answers read by another rule than the board's (radrbench-accuracy:1|parser:chestx-reasoner:ours"),
    (lambda v: v.update(radrscore=[1]), "radrscore: expected null or an object"),
    (lambda v: v.update(radrscore={"rows": []}),
     "radrscore: expected the fields addressed, cut, judged, judged_mean, judged_rows, judged_signature, refused, "
     "rows, signature, unparseable"),
    (lambda v: v.update(radrscore={"signature": "bleu2:1", "unparseable": -1, "refused": 0, "cut": 0, "addressed": 0,
                                   "judged": 1, "judged_mean": 2.0, "rows": [{}]}),
     "radrscore.signature: expected a radrscore signature; radrscore: judged, refused, unparseable, cut and addressed "
     "must be whole numbers; radrscore: judged_mean must be null or a number from 0 to 1"),
])
def test_radrbench_contents_are_checked(tmp_path, demo_dataset, edit, message):
    err = refused(write(tmp_path / "repo", clean_files() | {PATH: accuracy_json(tmp_path, demo_dataset, edit)}), SID)
    assert message in str(err), str(err)


def test_a_file_of_an_earlier_rexrank_without_scored_is_still_read(tmp_path, demo_dataset):
    """Rows without `scored` (every item was scored before answer rules existed) are read as scoring every item."""
    value = json.loads(accuracy_json(tmp_path, demo_dataset))
    assert all(row.pop("scored") == row["items"] for row in value["rows"])
    assert check_radrbench(json.dumps(value).encode())["rows"] == value["rows"]


@pytest.mark.parametrize("data", [b"[]", b"{", b'{"rows": NaN}', b"\xff", b"[" * 100 + b"]" * 100,
                                  b'{"dataset": "radrbench-cxr", "dataset": "x"}', json.dumps({"a": 1e999}).encode()])
def test_hostile_radrbench_files_give_a_message_never_a_crash(data):
    with pytest.raises(Exception) as err:
        check_radrbench(data)
    assert type(err.value).__name__ == "InputError"


# -- aggregate ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_aggregate_writes_the_radrbench_table_and_its_config(tmp_path, demo_dataset):
    repo = results_repo(tmp_path / "repo")
    for sub, model in (("lab-a", "demo-reasoner"), ("lab-d", "demo-guesser")):
        score_radrbench(repo / "submissions" / sub / "radrbench", demo_dataset, model)
        (repo / "submissions" / sub / "radrbench" / "radrbench-cxr.per_item.parquet").unlink()
    (repo / "submissions" / "lab-d" / "submission.json").write_text(json.dumps({"name": "Guesser (card)"}))
    aggregate(repo)
    table = pd.read_parquet(repo / "radrbench.parquet")
    assert tuple(table.columns) == RADRBENCH_COLUMNS and len(table) == 2 * 14
    overall = table[table["task"] == "all"].set_index("model")
    assert list(overall.index) == ["A", "Guesser (card)"]  # the card names the model; best first
    assert overall.loc["A", "accuracy"] == 21 / 22 and overall.loc["Guesser (card)", "items"] == 22
    assert overall.loc["A", "low"] <= 21 / 22 <= overall.loc["A", "high"]
    assert overall["signature"].str.startswith("radrbench-accuracy:1|parser:answers-v1").all()
    cache = str(tmp_path / "cache")
    loaded = datasets.load_dataset(str(repo), "radrbench", split="leaderboard", cache_dir=cache)
    assert sorted(set(loaded["model"])) == ["A", "Guesser (card)"] and set(loaded["task"]) >= {"temporal", "all"}
    board = datasets.load_dataset(str(repo), split="leaderboard", cache_dir=cache)  # the default config still
    assert sorted(board["model"]) == ["A", "B", "C", "E", "Official D"]


def test_aggregate_without_radrbench_results_writes_an_empty_table(tmp_path, capsys):
    assert backend(["aggregate", "--repo", str(results_repo(tmp_path))]) == 0
    table = pd.read_parquet(tmp_path / "radrbench.parquet")
    assert table.empty and tuple(table.columns) == RADRBENCH_COLUMNS


@pytest.mark.slow
def test_submit_merge_aggregate_round_trip_on_the_hub(tmp_path, demo_dataset, fake_hub, monkeypatch, capsys):
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    results = score_radrbench(tmp_path / "results", demo_dataset)
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--results", str(results), "--name", "Reasoner", "--institution", "Demo Lab",
                 "--repo", "rexrank/results"]) == 0
    [pr] = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    api.merge_pull_request("rexrank/results", pr.num, repo_type="dataset", token="hf_maintainer")
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["aggregate", "--hub", "rexrank/results"]) == 0
    table = datasets.load_dataset("rexrank/results", "radrbench", split="leaderboard")
    assert set(table["model"]) == {"Reasoner"} and table["submission"][0] == "demo-lab-reasoner"
    assert len(table) == 14


@pytest.mark.slow
def test_review_of_a_radrbench_submission_says_what_was_checked(tmp_path, demo_dataset, fake_hub, monkeypatch, capsys):
    from huggingface_hub import HfApi

    HfApi().create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--results", str(score_radrbench(tmp_path / "results", demo_dataset)), "--name",
                 "Reasoner", "--repo", "rexrank/results"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["review", "--hub", "rexrank/results", "--pr", "1"]) == 0
    [pr] = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    assert "RadRBench-CXR: accuracy 0.9545 [" in pr.comments[-1][1] and "not re-scored" in pr.comments[-1][1]
