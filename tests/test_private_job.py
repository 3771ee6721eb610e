"""The gated ReXGradient job on the fake Hub: it scores a pull request's predictions against private references
and publishes aggregates only. Canary strings planted in the references must appear in no file of the results repo,
no pull request comment, no output line and no error message."""

import json

import pandas as pd
import pytest
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.cli import main
from rexrank.data.build import Build, push_dataset, write_dataset
from rexrank.data.catalog import REXGRADIENT
from rexrank.results import Result

CANARY = "ZQX-CANARY-7731"
STUDIES = [(f"g{i}", f"Synthetic finding {i} {CANARY}-F{i}.", f"Synthetic impression {i} {CANARY}-I{i}.")
           for i in range(12)]


@pytest.fixture
def hub(fake_hub, tmp_path, monkeypatch):
    """A private reference set and a results repo with one open pull request carrying ReXGradient predictions."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    studies = pd.DataFrame(STUDIES, columns=["study_id", "findings", "impression"])
    push_dataset(write_dataset(Build(REXGRADIENT, "test", studies), tmp_path / "refs"), "gated/rexgradient")
    HfApi().create_repo("rexrank/results", repo_type="dataset")
    predictions = tmp_path / "gradient.jsonl"
    predictions.write_text("".join(json.dumps({"study_id": s, "prediction": "Synthetic finding. No effusion."}) + "\n"
                                   for s, _, _ in STUDIES))
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--name", "Gradient Model", "--private", f"rexgradient.findings={predictions}",
                 "--repo", "rexrank/results"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    return fake_hub


def everything_published(fake_hub, num):
    """Every file of the results repo on main and on the pull request, and the pull request's comments."""
    texts = [data for revision in ("main", f"refs/pr/{num}")
             for data in fake_hub.files("rexrank/results", repo_type="dataset", revision=revision).values()]
    [pr] = fake_hub.pull_requests("rexrank/results", repo_type="dataset")
    return b"".join(texts) + "".join(text for _, text in pr.comments).encode()


def test_only_aggregates_are_published_and_no_reference_text_anywhere(hub, capsys):
    assert backend(["private", "--hub", "rexrank/results", "--pr", "1", "--references", "gated/rexgradient",
                    "--metrics", "bleu2"]) == 0
    output = capsys.readouterr()
    assert "rexgradient findings: 12 studies; bleu2 0." in output.out
    files = hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    result = Result.from_dict(json.loads(files["submissions/gradient-model/results/rexgradient.findings.json"]))
    assert result.metrics["bleu2"].n == 12 and result.metrics["bleu2"].low is not None
    assert not [p for p in files if "per_study" in p or p.endswith(".parquet")]  # no per-study scores
    [pr] = hub.pull_requests("rexrank/results", repo_type="dataset")
    assert any(author == "maintainer" and "| findings | bleu2 |" in text for author, text in pr.comments)
    assert CANARY.encode() not in everything_published(hub, 1)
    assert CANARY not in output.out + output.err


def test_a_failure_inside_scoring_is_reported_without_its_message(hub, capsys, monkeypatch):
    from rexrank.scorers.bleu import Bleu2

    def leaky(self, texts):
        raise ValueError(f"could not tokenise {' '.join(texts)}")  # a message quoting the references

    monkeypatch.setattr(Bleu2, "features", leaky)
    assert backend(["private", "--hub", "rexrank/results", "--pr", "1", "--references", "gated/rexgradient",
                    "--metrics", "bleu2"]) == 2
    output = capsys.readouterr()
    assert "scoring findings failed (ValueError); details withheld: the references are private" in output.err
    assert CANARY not in output.out + output.err and CANARY.encode() not in everything_published(hub, 1)


def test_predictions_that_miss_studies_are_named_by_id(hub, capsys, tmp_path):
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"study_id": "g0", "prediction": "Synthetic."}) + "\n")
    HfApi().upload_file(path_or_fileobj=str(partial), repo_id="rexrank/results", repo_type="dataset",
                        path_in_repo="submissions/gradient-model/predictions/rexgradient.findings.jsonl",
                        revision="refs/pr/1", token="hf_researcher")
    assert backend(["private", "--hub", "rexrank/results", "--pr", "1", "--references", "gated/rexgradient",
                    "--metrics", "bleu2"]) == 2
    err = capsys.readouterr().err
    assert "study g1: in the split but has no prediction" in err and CANARY not in err


def test_a_pull_request_outside_its_folder_is_refused_before_anything_is_read(hub, capsys):
    HfApi().upload_file(path_or_fileobj=b"# mine now", path_in_repo="README.md", repo_id="rexrank/results",
                        repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    assert backend(["private", "--hub", "rexrank/results", "--pr", "1", "--references", "gated/rexgradient",
                    "--metrics", "bleu2"]) == 2
    err = capsys.readouterr().err
    assert "README.md" in err and CANARY not in err
    files = hub.files("rexrank/results", repo_type="dataset", revision="refs/pr/1")
    assert not any("/results/" in p for p in files)  # nothing scored, nothing committed
