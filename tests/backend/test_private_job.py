"""The gated ReXGradient job on the fake Hub, played by a hostile submitter: it scores a pull request's predictions
against private references and publishes aggregates only, at the board's precision. Canary strings planted in the
references must appear in no file of the results repo (main, the pull request, the ledger), no pull request comment,
no output line, no log record and no error message, on the path that scores and on every path that refuses."""

import io
import json
import logging
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.backend.private import PER_SUBMITTER, score_pull_request
from rexrank.catalog import TEST_SETS
from rexrank.cli import main
from rexrank.data.build import Build, push_dataset, write_dataset
from rexrank.reports import text_settings
from rexrank.results import Result
from rexrank.rules import ledger
from rexrank.scorecard import score as card

pytestmark = pytest.mark.slow  # each test runs the private job end to end on the loopback Hub

CANARY = "ZQX-CANARY-7731"
STUDIES = [(f"g{i}", f"Synthetic finding {i} {CANARY}-F{i}.", f"Synthetic impression {i} {CANARY}-I{i}.")
           for i in range(20)]
PR_PREDICTIONS = "submissions/gradient-lab-gradient-model/predictions/rexgradient.findings.jsonl"
PR_RESULT = "submissions/gradient-lab-gradient-model/results/rexgradient.findings.json"
JOB = ["private", "--hub", "rexrank/results", "--pr", "1", "--references", "gated/rexgradient", "--metrics", "bleu2"]
REVIEW = ["review", "--hub", "rexrank/results", "--pr", "1"]


def private(job: list[str] = JOB) -> int:
    """The review, then the private job, as the webhook runs them (the private job scores only a reviewed head)."""
    backend(REVIEW)
    return backend(job)


def predictions(variant: int = 0, empty: int = 0, same: int = 0) -> bytes:
    """One prediction per study: distinct texts, `variant` changing every one; the first `empty` empty, the next
    `same` one shared text."""
    texts = [f"Synthetic finding {i}. No effusion, variant {variant}." for i in range(len(STUDIES))]
    texts = [""] * empty + ["No acute findings."] * same + texts[empty + same:]
    return "".join(json.dumps({"study_id": s, "prediction": t}) + "\n" for (s, _, _), t in zip(STUDIES, texts)
                   ).encode()


@pytest.fixture
def hub(fake_hub, tmp_path, monkeypatch):
    """A private reference set and a results repo with one open pull request carrying ReXGradient predictions."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    studies = pd.DataFrame(STUDIES, columns=["study_id", "findings", "impression"])
    built = write_dataset(Build(TEST_SETS["rexgradient"].info, "test", studies), tmp_path / "refs")
    push_dataset(built, "gated/rexgradient")
    HfApi().create_repo("rexrank/results", repo_type="dataset")
    path = tmp_path / "gradient.jsonl"
    path.write_bytes(predictions())
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--name", "Gradient Model", "--institution", "Gradient Lab", "--private",
                 f"rexgradient.findings={path}", "--repo", "rexrank/results"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    return fake_hub


def push(data: bytes, path: str = PR_PREDICTIONS, pr: int = 1) -> None:
    HfApi().upload_file(path_or_fileobj=data, path_in_repo=path, repo_id="rexrank/results", repo_type="dataset",
                        revision=f"refs/pr/{pr}", token="hf_researcher")


def everything_published(fake_hub) -> bytes:
    """Every file of the results repo on every branch and pull request, and every comment."""
    refs = ["main"] + [f"refs/pr/{pr.num}" for pr in fake_hub.pull_requests("rexrank/results", repo_type="dataset")]
    texts = [data for revision in refs
             for data in fake_hub.files("rexrank/results", repo_type="dataset", revision=revision).values()]
    prs = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    comments = [text for pr in prs for _, text in pr.comments]
    return b"".join(texts) + "".join(comments).encode()


def assert_no_reference_text(fake_hub, output, caplog):
    assert CANARY not in output.out + output.err
    assert CANARY not in caplog.text
    assert CANARY.encode() not in everything_published(fake_hub)


def maintainer_comments(fake_hub, num=1) -> list[str]:
    pr = fake_hub.pull_requests("rexrank/results", repo_type="dataset")[num - 1]
    return [text for author, text in pr.comments if author == "maintainer"]


def test_only_aggregates_are_published_at_board_precision_and_no_reference_text_anywhere(hub, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    assert private() == 0
    output = capsys.readouterr()
    assert "rexgradient findings: 20 studies; bleu2 0." in output.out
    files = hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    result = Result.from_dict(json.loads(files[PR_RESULT]))
    bleu = result.metrics["bleu2"]
    assert bleu.n == 20 and bleu.low is not None and result.extras == {}
    assert text_settings("findings").items() <= bleu.signature.settings.items()  # signed as rexrank score signs it
    assert all(round(x, 3) == x for x in (bleu.value, bleu.mean, bleu.low, bleu.high))  # the board's precision
    assert not [p for p in files if "per_study" in p or p.endswith(".parquet")]  # no per-study scores
    assert any("| findings | bleu2 |" in text for text in maintainer_comments(hub))
    main_files = hub.files("rexrank/results", repo_type="dataset")
    [record] = [json.loads(v) for k, v in main_files.items() if k.startswith(ledger.PRIVATE)]
    assert record["author"] == "researcher" and record["task"] == "findings" and len(record["digests"]) == 20
    assert_no_reference_text(hub, capsys.readouterr(), caplog)


def broken_references(fake_hub, findings) -> None:
    """A second private reference set whose findings column is not text (a list holding the canary)."""
    frame = pd.DataFrame({"study_id": [s for s, _, _ in STUDIES], "findings": findings,
                          "impression": [i for _, _, i in STUDIES]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    fake_hub.add_repo("gated/broken", {"test.parquet": buffer.getvalue()}, repo_type="dataset")


def leaky_features(monkeypatch):
    from rexrank.scorers.bleu import Bleu2

    def leaky(self, texts):
        raise ValueError(f"could not tokenise {' '.join(texts)}")  # a message quoting the references

    monkeypatch.setattr(Bleu2, "features", leaky)


# Each way the job can refuse or fail, with what its message must say.
ERROR_PATHS = {
    "a malformed reference is named by study and field": (
        lambda hub, mp: broken_references(hub, [[f"{CANARY} {i}"] for i in range(len(STUDIES))]),
        ["--references", "gated/broken"], "study g0: findings must be text, got ndarray"),
    "references that cannot be read": (lambda hub, mp: None, ["--references", "gated/missing"],
                                       "details withheld: the references are private"),
    "a failure inside scoring": (lambda hub, mp: leaky_features(mp), [],
                                 "scoring findings failed (ValueError); details withheld"),
    "predictions that miss studies": (lambda hub, mp: push(predictions().split(b"\n", 1)[0] + b"\n"), [],
                                      "study g1: in the split but has no prediction"),
    "a prediction for a study the set does not have": (
        lambda hub, mp: push(predictions() + b'{"study_id": "zz9", "prediction": "x"}\n'), [],
        "study zz9: predicted but not in the split"),
    "mostly empty predictions": (lambda hub, mp: push(predictions(empty=19)), [],
                                 "19 of 20 predictions are empty (at most 10% may be)"),
    "predictions that are one text": (lambda hub, mp: push(predictions(same=11)), [],
                                      "11 of 20 predictions are the same text (at most 50% may be)"),
    "a pull request outside its folder": (
        lambda hub, mp: push(b"# mine now", "README.md"), [], "README.md: maintainers only"),
    "the Hub failing at the commit": (lambda hub, mp: (backend(REVIEW), setattr(hub, "commits_fail", True)), [], "503"),
}


@pytest.mark.parametrize("path", ERROR_PATHS)
def test_every_error_path_names_the_study_or_stage_and_never_the_references(hub, capsys, caplog, monkeypatch, path):
    caplog.set_level(logging.DEBUG)
    arrange, options, said = ERROR_PATHS[path]
    arrange(hub, monkeypatch)
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda seconds: None)  # the client's retry waits
    assert (backend if hub.commits_fail else private)(_with(JOB, options)) == 2
    output = capsys.readouterr()
    assert said in output.err
    hub.commits_fail = False
    assert_no_reference_text(hub, output, caplog)
    files = hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    assert not any("/results/" in p for p in files)  # nothing scored, nothing committed


def _with(job: list[str], options: list[str]) -> list[str]:
    """The job's arguments with `options` (flag, value) replacing the same flags."""
    out = list(job)
    for flag, value in zip(options[::2], options[1::2]):
        out[out.index(flag) + 1] = value
    return out


def test_a_copy_of_an_earlier_set_is_refused_and_the_refusal_is_commented(hub, capsys):
    assert private() == 0
    again = predictions().replace(b"variant 0.", b"variant 0!", 0)  # not one study changed
    push(again)
    assert private() == 2
    err = capsys.readouterr().err
    assert "differs from the set scored for pull request #1" in err and "in 0 of 20 studies" in err
    assert "refused, nothing was scored" in maintainer_comments(hub)[-1]


def test_scorings_per_submitter_are_limited_per_period(hub, capsys):
    for variant in range(1, PER_SUBMITTER):  # the fixture's set, then new sets: each differs in every study
        assert private() == 0
        push(predictions(variant))
    assert private() == 0
    push(predictions(99))
    assert private() == 2
    err = capsys.readouterr().err
    assert f"researcher had findings scored {PER_SUBMITTER} times in the last 30 days (at most {PER_SUBMITTER})" in err
    records = [p for p in hub.files("rexrank/results", repo_type="dataset") if p.startswith(ledger.PRIVATE)]
    assert len(records) == PER_SUBMITTER  # the refused one is not recorded
    later = datetime.now(UTC) + timedelta(days=31)  # the window has passed: scored again
    backend(REVIEW)
    [result] = score_pull_request("rexrank/results", 1, "gated/rexgradient", ["bleu2"], now=later)
    assert result.metrics["bleu2"].n == 20


def test_a_killed_private_job_resumes_from_its_last_chunk_and_keeps_no_text(hub, tmp_path, monkeypatch, capsys, caplog):
    """Killed (Ctrl-C, as a stand-in for SIGKILL, which tests/test_scorecard.py sends for real) after two of four
    chunks, run again: the two are not scored again, the published aggregates are those of an uninterrupted run, and
    the work folder never held a reference's text and is emptied at the end."""
    from rexrank.scorers.bleu import Bleu2

    work, score, calls = tmp_path / "work", Bleu2.score, []

    def killed_at_the_third_chunk(self, candidates, references):
        calls.append(len(candidates))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return score(self, candidates, references)

    monkeypatch.setattr(Bleu2, "score", killed_at_the_third_chunk)
    backend(REVIEW)
    with pytest.raises(KeyboardInterrupt):
        score_pull_request("rexrank/results", 1, "gated/rexgradient", ["bleu2"], work=work, chunk=5)
    kept = [p for p in work.rglob("*") if p.is_file()]
    assert len([p for p in kept if p.suffix == ".npz"]) == 2  # the two finished chunks
    assert not any(CANARY.encode() in p.read_bytes() for p in kept)
    assert PR_RESULT not in hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")

    calls.clear()
    monkeypatch.setattr(Bleu2, "score", lambda self, c, r: calls.append(len(c)) or score(self, c, r))
    [resumed] = score_pull_request("rexrank/results", 1, "gated/rexgradient", ["bleu2"], work=work, chunk=5)
    assert calls == [5, 5]  # chunks three and four only
    assert not any(work.iterdir())  # emptied once published

    submitted = [json.loads(line)["prediction"] for line in predictions().decode().splitlines()]
    rows = pd.DataFrame({"study_id": [s for s, _, _ in STUDIES], "reference": [f for _, f, _ in STUDIES],
                         "prediction": submitted})
    whole = card(rows, ["bleu2"]).metrics["bleu2"]
    published = resumed.metrics["bleu2"]
    assert (published.value, published.low, published.high) == tuple(round(x, 3) for x in (whole.value, whole.low,
                                                                                            whole.high))
    assert_no_reference_text(hub, capsys.readouterr(), caplog)


def test_a_judge_server_that_fails_publishes_nothing_and_scores_no_study(hub, fake_openai, monkeypatch, capsys,
                                                                          caplog):
    """GREEN judged on the maintainers' server, which answers 503 to every request and every retry: the job stops,
    says which stage, publishes no aggregate (a study the server failed for must neither count nor be left out) and
    quotes nothing."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
    monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)
    fake_openai.fail(503, times=20 * 7, retry_after=0)  # 20 studies, 7 attempts each, retried at once
    assert private([*JOB[:-1], "bleu2,green"]) == 2
    output = capsys.readouterr()
    assert "scoring findings: the judge could not score green" in output.err and "run the job again" in output.err
    files = hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    assert PR_RESULT not in files and not [k for k in hub.files("rexrank/results", repo_type="dataset")
                                           if k.startswith(ledger.PRIVATE)]
    assert_no_reference_text(hub, output, caplog)
