"""Submissions: `rexrank submit` collects what `rexrank score` wrote into the results repo layout; the aggregate
job ranks the merged results by 1/RadCliQ-v1, refusing to rank numbers made with another signature."""

import json
from pathlib import Path

import datasets
import pandas as pd
import pytest
from fixtures.board import results_repo
from fixtures.outputs import written
from fixtures.submissions import score
from rendered import table_rows

from rexrank import demo
from rexrank.backend.__main__ import main as backend
from rexrank.board.aggregate import aggregate
from rexrank.cli import main
from rexrank.submission import ModelCard


def test_the_submission_id_comes_from_institution_and_name():
    assert ModelCard("MedVersa 2.0", "Harvard / Rajpurkar Lab").submission_id == "harvard-rajpurkar-lab-medversa-2-0"
    with pytest.raises(Exception, match="cannot make a submission id"):
        ModelCard("***").submission_id  # noqa: B018


def test_dry_run_lists_the_repo_layout_and_uploads_nothing(tmp_path, capsys):
    results = score(tmp_path / "results")
    private = tmp_path / "gradient.jsonl"
    private.write_text('{"study_id": "g1", "prediction": "No acute findings."}\n')
    capsys.readouterr()
    code = main(["submit", "--results", str(results), "--name", "Careful", "--institution", "Demo Lab",
                 "--private", f"rexgradient.findings={private}", "--repo", "org/results", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and "dry run: nothing uploaded to org/results" in out
    files = out.split("on the board:")[0]
    listed = [line.split()[0] for line in files.splitlines() if line.startswith("  ")]
    prefix = "submissions/demo-lab-careful/"
    assert listed == [prefix + p for p in (
        "per_study/mimic-cxr.findings.parquet", "per_study/mimic-cxr.findings_impression.parquet",
        "predictions/mimic-cxr.findings.jsonl", "predictions/mimic-cxr.findings_impression.jsonl",
        "predictions/rexgradient.findings.jsonl", "results/mimic-cxr.findings.json",
        "results/mimic-cxr.findings_impression.json", "submission.json")]


@pytest.mark.slow
def test_what_cannot_be_submitted_is_named(tmp_path, capsys):
    wrong_name = score(tmp_path / "a", dataset="my-split")
    assert main(["submit", "--results", str(wrong_name), "--name", "X", "--dry-run"]) == 2
    assert "my-split.findings.demo-careful.json: not <dataset>.<task>.<model>.json for a rexrank dataset" in \
        capsys.readouterr().err

    stale = score(tmp_path / "b")
    path = written(stale, "mimic-cxr.findings.json")
    data = json.loads(path.read_text())
    bleu = data["metrics"]["bleu2"]
    bleu["signature_detail"]["version"] = "0"
    bleu["signature"] = bleu["signature"].replace("bleu2:1|", "bleu2:0|")
    path.write_text(json.dumps(data))
    (written(stale, "mimic-cxr.findings_impression.predictions.jsonl")).unlink()
    assert main(["submit", "--results", str(stale), "--name", "X", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "bleu2 was made by version 0, this rexrank's is 1: re-score" in err
    assert "mimic-cxr.findings_impression.demo-careful.predictions.jsonl is missing" in err

    twice = score(tmp_path / "c")
    lines = (written(twice, "mimic-cxr.findings.predictions.jsonl")).read_text().splitlines()
    (written(twice, "mimic-cxr.findings.predictions.jsonl")).write_text("\n".join([*lines, lines[0]]) + "\n")
    assert main(["submit", "--results", str(twice), "--name", "X", "--dry-run"]) == 2
    assert f"study {json.loads(lines[0])['study_id']} predicted twice" in capsys.readouterr().err


def test_aggregate_ranks_by_inverse_radcliq_and_leaves_other_signatures_unranked(tmp_path):
    board = aggregate(results_repo(tmp_path))
    mimic = board[board["dataset"] == "mimic-cxr"].set_index("model")
    assert mimic["rank"].dropna().to_dict() == {"B": 1, "Official D": 2, "A": 3} and pd.isna(mimic.loc["C", "rank"])
    assert "RadCliQ-v1 made as radcliq_v1:2" in mimic.loc["C", "unranked"]
    assert mimic.loc["Official D", "provenance"] == "imported" and mimic.loc["B", "date"] == "2026-11-20"
    assert board[board["dataset"] == "iu-xray"]["rank"].tolist() == [1]  # ranked within its own dataset
    # the board is a Hub dataset: load_dataset reads the repo's card
    loaded = datasets.load_dataset(str(tmp_path), split="leaderboard", cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded["model"]) == ["A", "B", "C", "E", "Official D"]


def test_the_aggregate_job_is_a_plain_cli(tmp_path, capsys):
    assert backend(["aggregate", "--repo", str(results_repo(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "leaderboard.parquet 5 rows, 4 ranked, 1 unranked" in out and "unranked: C (mimic-cxr findings)" in out


def test_the_aggregate_job_leaves_out_an_unreadable_result_names_it_and_fails(tmp_path, capsys):
    repo = results_repo(tmp_path)
    bad = repo / "submissions" / "lab-b" / "results" / "mimic-cxr.findings.json"
    bad.write_text(bad.read_text().replace('"schema_version": 1', '"schema_version": 9'))
    (repo / "imported" / "iu-xray.findings.e.json").write_text("{broken")
    assert backend(["aggregate", "--repo", str(repo)]) == 1
    out, err = capsys.readouterr()
    assert "leaderboard.parquet 3 rows" in out  # the rest is ranked and written
    assert f"left out: {bad}: schema_version 9 is not 1" in err
    # an imported file changed after a maintainer vouched for it is not the maintainers' any more (rule 21)
    assert "imported/iu-xray.findings.e.json: not among the" in err and "changed since maintainer recorded it" in err
    assert sorted(pd.read_parquet(repo / "leaderboard.parquet")["model"]) == ["A", "C", "Official D"]


@pytest.mark.slow
def test_submit_review_merge_aggregate_round_trip_on_the_hub(tmp_path, fake_hub, monkeypatch, capsys):
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    results = score(tmp_path / "results")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "Careful", "--institution", "Demo Lab",
                 "--repo", "rexrank/results", "--access", "open-weights", "--code", "https://example.org/code",
                 "--paper", "https://arxiv.org/abs/2401.00001", "--trained-on", "mimic-cxr"]) == 0
    assert "pull request opened: " in capsys.readouterr().out
    [pr] = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    assert pr.status == "open" and pr.author == "researcher"
    assert pr.touched and all(path.startswith("submissions/demo-lab-careful/") for path in pr.touched)
    assert "leaderboard.parquet" not in fake_hub.files("rexrank/results", repo_type="dataset")  # main untouched

    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["merge", "--hub", "rexrank/results", "--pr", "1"]) == 2  # not reviewed yet
    assert "never reviewed" in capsys.readouterr().err
    assert backend(["review", "--hub", "rexrank/results", "--pr", "1", "--dataset", f"mimic-cxr={demo.DATASET}"]) == 0
    assert backend(["merge", "--hub", "rexrank/results", "--pr", "1"]) == 0
    assert backend(["aggregate", "--hub", "rexrank/results"]) == 0
    board = datasets.load_dataset("rexrank/results", split="leaderboard")
    assert sorted(zip(board["model"], board["task"])) == [("Careful", "findings"), ("Careful", "findings_impression")]
    assert board["submission"] == ["demo-lab-careful"] * 2 and board["provenance"] == ["scored"] * 2
    assert board["unranked"] == ["no 1/RadCliQ-v1"] * 2  # scored with bleu2 only: verified, but no ranking metric
    # the card's context reaches the board, and the verified result names its per-study table for Compare
    assert board["access"] == ["open-weights"] * 2 and board["code"] == ["https://example.org/code"] * 2
    assert board["paper"] == ["https://arxiv.org/abs/2401.00001"] * 2 and board["trained_on"] == ["mimic-cxr"] * 2
    assert all(len(sha) == 64 for sha in board["per_study_sha256"])


@pytest.fixture
def opened(tmp_path, fake_hub, monkeypatch):
    """The results repo with one submission pull request from a researcher (bleu2 on the demo split as mimic-cxr)."""
    from huggingface_hub import HfApi

    HfApi().create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--results", str(score(tmp_path / "results")), "--name", "Careful", "--institution",
                 "Demo Lab", "--repo", "rexrank/results"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    return fake_hub


def review(capsys):
    capsys.readouterr()
    code = backend(["review", "--hub", "rexrank/results", "--pr", "1", "--dataset", f"mimic-cxr={demo.DATASET}"])
    return code, capsys.readouterr()


@pytest.mark.slow
def test_review_rescores_the_predictions_and_comments_the_comparison(opened, capsys):
    code, output = review(capsys)
    assert code == 0 and "rexrank/results #1: 2 numbers re-scored, 0 outside the CI" in output.out
    [pr] = opened.pull_requests("rexrank/results", repo_type="dataset")
    table = pr.comments[-1][1]
    rows = table_rows(table)
    assert pr.comments[-1][0] == "maintainer" and [r[-1] for r in rows[1:]] == ["ok", "ok"]
    assert rows[1][:3] == ["mimic-cxr", "findings", "bleu2"] and rows[2][1] == "findings_impression"
    from rexrank.reports import text_settings
    from rexrank.results import Result

    files = opened.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    for task in ("findings", "findings_impression"):  # re-scored and signed as rexrank score signs it
        made = Result.from_dict(json.loads(files[f"submissions/demo-lab-careful/results/mimic-cxr.{task}.json"]))
        assert made.checks["rescored_by"] == "rexrank review job"
        assert text_settings(task).items() <= made.metrics["bleu2"].signature.settings.items()


@pytest.mark.slow
def test_review_refuses_numbers_that_disagree_with_their_own_table(opened, capsys):
    from huggingface_hub import HfApi, hf_hub_download

    path = "submissions/demo-lab-careful/results/mimic-cxr.findings.json"
    data = json.loads(Path(hf_hub_download("rexrank/results", path, repo_type="dataset", revision="refs/pr/1"))
                      .read_text())
    data["metrics"]["bleu2"]["value"] = data["metrics"]["bleu2"]["ci"][1] = 0.99  # better than it is
    HfApi().upload_file(path_or_fileobj=json.dumps(data).encode(), path_in_repo=path, repo_id="rexrank/results",
                        repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    code, output = review(capsys)
    assert code == 2 and "metrics.bleu2: value 0.99 is not its mean" in output.err
    [pr] = opened.pull_requests("rexrank/results", repo_type="dataset")
    assert "refused, nothing was scored" in pr.comments[-1][1]


@pytest.mark.slow
def test_review_flags_a_consistent_forgery_and_replaces_it_with_its_own(opened, capsys, tmp_path):
    from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download

    from rexrank import stats
    from rexrank.results import MetricResult, Result

    prefix = "submissions/demo-lab-careful"
    table_path = hf_hub_download("rexrank/results", f"{prefix}/per_study/mimic-cxr.findings.parquet",
                                 repo_type="dataset", revision="refs/pr/1")
    result = Result.read(hf_hub_download("rexrank/results", f"{prefix}/results/mimic-cxr.findings.json",
                                         repo_type="dataset", revision="refs/pr/1"))
    honest = result.metrics["bleu2"].value
    table = pd.read_parquet(table_path).assign(bleu2=0.99)  # every study better than it is, table and result alike
    forged = tmp_path / "forged.parquet"
    table.to_parquet(forged, index=False)
    estimate = stats.estimate(table["bleu2"], resamples=50)
    result = Result(result.model, result.dataset, result.split, result.task, {"bleu2": MetricResult.from_estimate(
        estimate, result.metrics["bleu2"].signature)}, result.counts)
    HfApi().create_commit("rexrank/results", [
        CommitOperationAdd(f"{prefix}/per_study/mimic-cxr.findings.parquet", str(forged)),
        CommitOperationAdd(f"{prefix}/results/mimic-cxr.findings.json", result.to_json().encode())],
        commit_message="better numbers", repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    code, output = review(capsys)
    assert code == 0 and "1 outside the CI" in output.out and "submitted 0.99" in output.out
    merged = json.loads(opened.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")[
        f"{prefix}/results/mimic-cxr.findings.json"])
    assert merged["metrics"]["bleu2"]["value"] == pytest.approx(honest) and merged["model"]["name"] == "Careful"


@pytest.mark.slow
def test_review_refuses_a_pull_request_that_touches_the_board(opened, capsys):
    from huggingface_hub import HfApi

    HfApi().upload_file(path_or_fileobj=b"x", path_in_repo="leaderboard.parquet", repo_id="rexrank/results",
                        repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    code, output = review(capsys)
    assert code == 2 and "leaderboard.parquet" in output.err
    [pr] = opened.pull_requests("rexrank/results", repo_type="dataset")
    said = [text for author, text in pr.comments if author == "maintainer"]
    assert len(said) == 1 and "refused, nothing was scored" in said[0] and "leaderboard" in said[0]


@pytest.mark.slow
def test_a_review_sweep_goes_through_every_open_pull_request(opened, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_other")
    assert main(["submit", "--results", str(score(tmp_path / "second", system="demo-template")), "--name",
                 "Template", "--repo", "rexrank/results"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    capsys.readouterr()
    assert backend(["review", "--hub", "rexrank/results", "--dataset", f"mimic-cxr={demo.DATASET}"]) == 0
    out = capsys.readouterr().out
    assert "rexrank/results #1: 2 numbers re-scored" in out and "rexrank/results #2: 2 numbers re-scored" in out


@pytest.mark.slow
def test_a_token_without_write_access_is_told_so(opened, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert backend(["aggregate", "--hub", "rexrank/results"]) == 2
    err = capsys.readouterr().err
    assert "rexrank.backend: error: 403 Forbidden: You don't have the rights to push to rexrank/results" in err
    assert "leaderboard.parquet" not in opened.files("rexrank/results", repo_type="dataset")


@pytest.mark.slow
def test_an_upload_cut_off_midway_leaves_nothing_open_and_a_retry_submits(tmp_path, fake_hub, monkeypatch, capsys):
    from huggingface_hub import HfApi

    HfApi().create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    results = score(tmp_path / "results")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    fake_hub.commits_fail = True
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda seconds: None)  # the client's retry waits
    args = ["submit", "--results", str(results), "--name", "Careful", "--repo", "rexrank/results"]
    assert main(args) == 2 and "503" in capsys.readouterr().err
    [cut] = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    assert cut.status == "closed" and cut.touched == []  # nothing half-published, nothing left open

    fake_hub.commits_fail = False
    assert main(args) == 0
    retried = fake_hub.pull_requests("rexrank/results", repo_type="dataset")[-1]
    assert retried.status == "open" and len(retried.touched) == 7


def test_a_result_set_cut_between_its_files_is_refused(tmp_path, capsys, monkeypatch):
    """A run stopped after the per-study table and predictions but before the result JSON (a kill, an error) leaves
    the old JSON beside new files; submit refuses the mixed set, and a complete rerun is accepted."""
    from rexrank.results import Result

    results = score(tmp_path / "results")
    monkeypatch.setattr(Result, "write", lambda self, path: (_ for _ in ()).throw(OSError("disk full")))
    assert main(["score", "--predictions", str(demo.predictions("demo-template", "findings")), "--dataset",
                 str(demo.DATASET), "--dataset-name", "mimic-cxr", "--task", "findings", "--metrics", "bleu2",
                 "--out", str(results), "--quiet", "--model-name", "demo-careful", "--replace"]) == 2  # its files
    monkeypatch.undo()
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert ("mimic-cxr.findings.demo-careful.json: mimic-cxr.findings.demo-careful.per_study.parquet is not the file "
            "scored with it") in err
    assert "mimic-cxr.findings.demo-careful.predictions.jsonl is not the file scored with it" in err
    score(results)  # the same run again, to the end
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 0


def test_dry_run_says_what_the_board_will_do_with_each_result(tmp_path, capsys):
    results = score(tmp_path / "results")  # synthetic ids, BLEU-2 only
    private = tmp_path / "gradient.jsonl"
    private.write_text('{"study_id": "g1", "prediction": "No acute findings."}\n')
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "Careful", "--private",
                 f"rexgradient.findings={private}", "--dry-run"]) == 0
    plan = capsys.readouterr().out.split("on the board:\n")[1].split("dry run:")[0].splitlines()
    assert plan[:4] == [
        "  mimic-cxr findings:",
        "    studies: 45 scored of the split's 48 (3 left out by the task); its study ids are of no official split (a "
        "synthetic stand-in?)",
        "    ranked: no: the board's review re-scores on the official MIMIC-CXR test split (2,347 studies), and these "
        "ids are not its",
        "    provenance: scored (the maintainers' review re-scores its predictions with bleu2; the row is "
        "self-reported: shown with their CIs, marked †)"]
    assert plan[4] == "  mimic-cxr findings_impression:"
    assert plan[8:] == [
        "  rexgradient findings:",
        "    studies: 1 predictions for the private ReXGradient test split (10,000 studies)",
        "    ranked: among the self-reported only, when the gated job's metrics include 1/RadCliQ-v1; add model/ "
        "(--model) for a ranked row",
        "    provenance: scored (the maintainers' gated job scores them and publishes aggregates only, no per-study "
        "scores; the row is self-reported)"]


def test_the_plan_names_the_official_split_and_what_ranking_needs(tmp_path):
    from dataclasses import replace

    from rexrank.data.known import official_ids
    from rexrank.results import Result
    from rexrank.submission import Piece, board_plan, collect

    ids = official_ids("iu-xray", "test")
    split = tmp_path / "iu_xray_test.json"  # synthetic reports under the official ids
    split.write_text(json.dumps({i: {"section_findings": f"Synthetic finding {n}.", "section_impression": "None."}
                                 for n, i in enumerate(ids)}))
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"study_id": i, "prediction": "No acute process."}) + "\n" for i in ids))
    out = tmp_path / "out"
    assert main(["score", "--predictions", str(predictions), "--dataset", str(split), "--task", "findings",
                 "--metrics", "bleu2", "--resamples", "10", "--out", str(out), "--quiet"]) == 0
    plan = board_plan(collect(out))
    assert plan[1] == ("  studies: 590 scored of the split's 590 (0 left out by the task); its study ids are the "
                       "official IU-Xray test split (590 studies)")
    assert plan[2] == ("  ranked: no: no 1/RadCliQ-v1, and the review re-scores only the metrics a result carries "
                       "(missing radgraph, bertscore, semb_score; score with them)")

    path = written(out, "iu-xray.findings.json")
    result = Result.read(path)
    skipped = {"radcliq_v1": "needs radgraph (radgraph: ... Run `rexrank models download radgraph` where ...)"}
    replace(result, skipped=skipped).write(path)
    assert board_plan([Piece("results/iu-xray.findings.json", path)])[2].endswith(
        "(missing radgraph, bertscore, semb_score; their weights were not here: `rexrank models download --all`, "
        "then score again)")
    radcliq = replace(result.metrics["bleu2"], value=0.812, statistic="inverse_mean")
    replace(result, metrics=result.metrics | {"radcliq_v1": radcliq}).write(path)
    assert board_plan([Piece("results/iu-xray.findings.json", path)])[2] == (
        "  ranked: among the self-reported only, by 1/RadCliQ-v1 (yours 0.812; the review's number stands); the board "
        "ranks what the maintainers made: add model/ (--model) for a ranked row")


def test_the_plan_says_a_code_submission_is_run_by_the_maintainers(tmp_path):
    from rexrank.submission import board_plan, model_pieces

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/coded-model", "revision": "a" * 40}],
                                                  "tasks": ["findings"], "images": "multi", "gpu_memory_gb": 20}))
    (model / "requirements.txt").write_text("numpy\n")
    (model / "inference.py").write_text("print('a report')\n")
    assert board_plan(model_pieces(model)) == [
        "model/: a code submission (RRG: findings)",
        "  provenance: generated (the maintainers' inference job runs it in the sandbox: a smoke test on a public "
        "split, then the private images (ReXGradient's; ReXVQA's questions on them for VQA); its rows show generated "
        "by maintainers)"]
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/coded-model", "revision": "a" * 40}],
                                                  "serves": ["RRG", "VQA"], "tasks": ["findings"], "images": "multi",
                                                  "gpu_memory_gb": 20}))
    assert board_plan(model_pieces(model))[0] == "model/: a code submission (RRG and VQA: findings, vqa)"


def a_model(folder: Path, requirements: str | None = None, pyproject: str | None = None,
            environment: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/coded-model", "revision": "a" * 40}],
                                                   "tasks": ["findings"], "images": "multi", "gpu_memory_gb": 20}))
    (folder / "inference.py").write_text("print('a report')\n")
    for name, text in (("requirements.txt", requirements), ("pkg/pyproject.toml", pyproject),
                       ("environment.yaml", environment)):
        if text is not None:
            (folder / name).parent.mkdir(exist_ok=True)
            (folder / name).write_text(text)
    return folder


BUILD_ROUTES = {  # issue 44's routes through a package's requirements, each a refusal the job's fetch sandbox makes
    "an option": ("--requirement=/proc/self/environ\n", None, None, "requirements.txt line 1: "
                  "'--requirement=/proc/self/environ' is an option"),
    "a URL": ("x @ http://127.0.0.1:9/x.whl\n", None, None, "requirements.txt line 1: 'x @ http://127.0.0.1:9/x.whl' "
              "names a URL or a path"),
    "a folder outside model/": ("../../..\n", None, None, "requirements.txt line 1: '../../..' is a folder outside "
                                "model/"),
    "a package's dependency": ("./pkg\n", '[project]\nname = "pkg"\ndependencies = ["evilhost @ file:///tmp/pkg2"]\n',
                               None, "pkg/pyproject.toml [project].dependencies[0]: 'evilhost @ file:///tmp/pkg2' "
                               "names a URL or a path"),
    "a build requirement": ("./pkg\n", '[build-system]\nrequires = ["--index-url=http://x"]\n', None,
                            "pkg/pyproject.toml [build-system].requires[0]: '--index-url=http://x' is an option"),
    "hostile TOML": ("./pkg\n", "[project]\ndynamic = 5\n", None, "pkg/pyproject.toml [project].dynamic: (a int) is "
                     "not a list"),
    "a conda URL": (None, None, "dependencies:\n  - https://x.invalid/evil.tar.bz2\n", "environment.yaml"),
}


@pytest.mark.parametrize("route", BUILD_ROUTES)
def test_submit_dry_run_refuses_what_the_jobs_fetch_sandbox_refuses_and_runs_no_package_tool(tmp_path, monkeypatch,
                                                                                             capsys, route):
    """`rexrank submit --model --dry-run` reads model/'s requirements with the job's validator, on the submitter's
    machine, before any pull request: the same one line, and no pip or conda (no process is started)."""
    import subprocess

    from rexrank.inference.requirements import BuildFailed, check

    requirements, pyproject, environment, said = BUILD_ROUTES[route]
    model = a_model(tmp_path / "model", requirements, pyproject, environment)
    with pytest.raises(BuildFailed) as job:  # what the fetch sandbox says
        check(model)
    assert str(job.value).startswith(said)

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0]!r}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    capsys.readouterr()
    assert main(["submit", "--model", str(model), "--name", "X", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{model}/{job.value}; the maintainers' job would refuse it" in err and len(err.strip().splitlines()) == 1


def test_submit_dry_run_passes_an_honest_models_requirements(tmp_path, capsys):
    model = a_model(tmp_path / "model", "numpy>=1.26\n./pkg\n",
                    '[build-system]\nrequires = ["setuptools>=61"]\n[project]\nname = "pkg"\nversion = "1"\n'
                    'dependencies = ["pillow>=10; python_version >= \'3.10\'"]\n')
    assert main(["submit", "--model", str(model), "--name", "X", "--dry-run"]) == 0
    assert "model/model.yaml" in capsys.readouterr().out
