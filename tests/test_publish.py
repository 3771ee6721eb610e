"""`rexrank publish`: metric Spaces that `evaluate.load` reads back, built datasets that `load_dataset` reads back,
the leaderboard Space with its results variable; idempotent, with --dry-run and a clear refusal for a read token.
All against the loopback fake Hub."""

import json
import re
import shutil

import pytest
from fakehub import use_evaluate_endpoint
from fixtures.built import rexrank_json

from rexrank import __version__, demo
from rexrank.cli import main
from rexrank.publish import METRICS_DIR, SPACE_DIR, metric_folders, pin_requirements

ORG = "rexrank-test"
METRICS = [folder.name for folder in metric_folders()]


@pytest.fixture
def writer(fake_hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_w")  # read at call time by HfApi(); the fixture cleared any real one
    return fake_hub


def _built(tmp_path, name):
    rows = [json.loads(line) for line in demo.DATASET.read_text().splitlines()]
    source = rexrank_json(tmp_path / f"{name}.json", rows)
    assert main(["build-dataset", name, "--source", str(source), "--out", str(tmp_path / name)]) == 0
    return tmp_path / name, rows


def test_pin_requirements_pins_rexrank_keeps_the_rest():
    assert pin_requirements("rexrank>=0.1.0\nevaluate>=0.4.6\n", "1.2.3") == "rexrank==1.2.3\nevaluate>=0.4.6\n"
    assert pin_requirements("rexrank[metrics] >= 0.1\n", "1.2.3") == "rexrank[metrics]==1.2.3\n"
    assert pin_requirements("gradio\n", "1.2.3") == "rexrank==1.2.3\ngradio\n"
    assert pin_requirements("rexrank-extras>=1\n", "1.2.3").startswith("rexrank==1.2.3\nrexrank-extras>=1")


@pytest.mark.slow
def test_publish_metrics_then_evaluate_load_scores_from_the_space(writer, monkeypatch, tmp_path, capsys):
    assert main(["publish", "metrics", "--org", ORG]) == 0
    out = capsys.readouterr().out
    for name in METRICS:
        assert f"{ORG}/{name} (space): create" in out
        files = writer.files(f"{ORG}/{name}", repo_type="space")
        local = METRICS_DIR / name
        assert {f"{name}.py", "README.md", "app.py", "requirements.txt"} <= set(files)
        assert files[f"{name}.py"] == (local / f"{name}.py").read_bytes()  # as checked in (written from its spec)
        assert files["README.md"] == (local / "README.md").read_bytes()  # the card's YAML is the Space config
        pins = [line for line in files["requirements.txt"].decode().splitlines() if line.startswith("rexrank")]
        assert len(pins) == 1 and re.fullmatch(rf"rexrank(\[[\w,]+\])?=={re.escape(__version__)}", pins[0]), pins
        assert not any("__pycache__" in p or p.endswith(".pyc") for p in files)
        assert writer.settings(f"{ORG}/{name}", repo_type="space")["sdk"] == "gradio"
    assert "rexrank>=" in (METRICS_DIR / "bleu2" / "requirements.txt").read_text()  # the repo's own file untouched

    import evaluate

    use_evaluate_endpoint(monkeypatch, writer.url, tmp_path / "evaluate")
    bleu2 = evaluate.load(f"{ORG}/bleu2")
    assert writer.downloads("bleu2.py") >= 1  # served by the fake Space, not an earlier run's cached module
    result = bleu2.compute(predictions=["No pleural effusion."], references=["No pleural effusion or pneumothorax."])
    assert result["bleu2"] == pytest.approx(0.4952, abs=1e-4)
    assert result["signature"].endswith(f"rexrank:{__version__}")
    for name in METRICS:  # every module loads back from its Space (building it needs no weights)
        module = evaluate.load(f"{ORG}/{name}")
        assert writer.downloads(f"{name}.py") >= 1
        assert isinstance(module, evaluate.EvaluationModule) and module.name


@pytest.mark.slow
def test_publish_metrics_twice_makes_no_second_commit_and_dry_run_lists_changes(writer, tmp_path, capsys):
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2,radcliq"]) == 0
    before = {n: writer.commits(f"{ORG}/{n}", "space") for n in ("bleu2", "radcliq")}
    assert before["bleu2"][0] == "initial commit" and len(before["bleu2"]) == 2
    capsys.readouterr()
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2,radcliq"]) == 0
    assert {n: writer.commits(f"{ORG}/{n}", "space") for n in ("bleu2", "radcliq")} == before
    assert capsys.readouterr().out.splitlines() == [f"{ORG}/bleu2 (space): up to date",
                                                    f"{ORG}/radcliq (space): up to date"]

    copy = tmp_path / "metrics"
    shutil.copytree(METRICS_DIR / "bleu2", copy / "bleu2", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "bleu2" / "app.py").write_text((copy / "bleu2" / "app.py").read_text() + "# changed\n")
    (copy / "bleu2" / "NOTES.md").write_text("new\n")
    args = ["publish", "metrics", "--org", ORG, "--only", "bleu2", "--metrics-dir", str(copy)]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{ORG}/bleu2 (space): would update\n  add NOTES.md\n  update app.py\n" in out
    assert "dry run: nothing was changed" in out
    assert writer.commits(f"{ORG}/bleu2", "space") == before["bleu2"]
    assert main(args) == 0
    assert len(writer.commits(f"{ORG}/bleu2", "space")) == 3
    assert writer.files(f"{ORG}/bleu2", "space")["app.py"].endswith(b"# changed\n")
    assert main(["publish", "metrics", "--org", ORG, "--only", "nosuch"]) == 2
    assert "no metric module nosuch" in capsys.readouterr().err


def test_dry_run_on_a_new_org_lists_every_file_and_creates_nothing(writer, capsys):
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{ORG}/bleu2 (space): would create" in out and "  add bleu2.py" in out and "  add requirements.txt" in out
    assert not any(m == "POST" for m, _ in writer.requests)


@pytest.mark.slow
def test_a_read_token_gets_a_clear_message(fake_hub, monkeypatch, capsys):
    fake_hub.read_only.add("hf_r")
    monkeypatch.setenv("HF_TOKEN", "hf_r")
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2"]) == 2
    err = capsys.readouterr().err
    assert f"{ORG}/bleu2: the Hub refused to create the space repo (403" in err
    assert "write access" in err and "HF_TOKEN" in err and "Traceback" not in err

    # The Space exists (someone else made it): create_repo(exist_ok) passes, the upload is what is refused.
    fake_hub.add_repo(f"{ORG}/bleu2", {"README.md": b"old"}, repo_type="space")
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2"]) == 2
    err = capsys.readouterr().err
    assert f"{ORG}/bleu2: the Hub refused to upload (403" in err and "write access" in err
    assert fake_hub.commits(f"{ORG}/bleu2", "space") == ["Added by the test"]


@pytest.mark.slow
def test_publish_dataset_then_load_dataset_and_again_no_commit(writer, tmp_path, capsys):
    import datasets

    folder, rows = _built(tmp_path, "iu-xray")
    assert main(["publish", "dataset", "iu-xray", "--from", str(folder), "--repo", f"{ORG}/iu-xray"]) == 0
    assert f"{ORG}/iu-xray (dataset): create" in capsys.readouterr().out
    assert writer.settings(f"{ORG}/iu-xray", "dataset") == {"private": False, "gated": False}
    loaded = datasets.load_dataset(f"{ORG}/iu-xray", "findings", split="test")
    expected = {r["study_id"] for r in rows if r["findings"]}
    assert set(loaded["study_id"]) == expected and len(loaded) == len(expected)

    commits = writer.commits(f"{ORG}/iu-xray", "dataset")
    assert main(["publish", "dataset", "iu-xray", "--from", str(folder), "--repo", f"{ORG}/iu-xray"]) == 0
    assert capsys.readouterr().out.strip() == f"{ORG}/iu-xray (dataset): up to date"
    assert writer.commits(f"{ORG}/iu-xray", "dataset") == commits
    assert main(["publish", "dataset", "mimic-cxr", "--from", str(folder), "--repo", f"{ORG}/x"]) == 2
    assert "holds 'iu-xray', not 'mimic-cxr'" in capsys.readouterr().err


@pytest.mark.slow
def test_credentialed_data_is_refused_publicly_and_gated_before_upload(writer, tmp_path, capsys):
    folder, _ = _built(tmp_path, "mimic-cxr")
    assert main(["publish", "dataset", "mimic-cxr", "--from", str(folder), "--repo", f"{ORG}/mimic"]) == 2
    assert "mimic-cxr is credentialed data" in capsys.readouterr().err
    assert not any(m != "GET" for m, _ in writer.requests)  # nothing created, nothing sent

    assert main(["publish", "dataset", "mimic-cxr", "--from", str(folder), "--repo", f"{ORG}/mimic", "--gated",
                 "--dry-run"]) == 0
    assert "  set gated: manual" in capsys.readouterr().out
    assert main(["publish", "dataset", "mimic-cxr", "--from", str(folder), "--repo", f"{ORG}/mimic", "--gated"]) == 0
    assert writer.settings(f"{ORG}/mimic", "dataset") == {"private": False, "gated": "manual"}
    writes = [(m, p) for m, p in writer.requests if m in ("PUT", "POST") and "validate-yaml" not in p]
    settings_at = writes.index(("PUT", f"/api/datasets/{ORG}/mimic/settings"))
    assert settings_at < next(i for i, (_, p) in enumerate(writes) if p.startswith(f"/api/datasets/{ORG}/mimic/commit"))
    files = writer.files(f"{ORG}/mimic", "dataset")
    assert "findings/test-00000-of-00001.parquet" in files and "build_info.json" in files


def test_rexgradient_goes_only_to_a_private_repo(writer, tmp_path, capsys):
    folder = tmp_path / "rexgradient"
    folder.mkdir()
    (folder / "build_info.json").write_text(json.dumps({"dataset": "rexgradient"}))
    assert main(["publish", "dataset", "rexgradient", "--from", str(folder), "--repo", f"{ORG}/rg", "--gated"]) == 2
    assert "only be pushed to a private repo" in capsys.readouterr().err
    assert main(["publish", "dataset", "iu-xray", "--from", str(tmp_path), "--repo", f"{ORG}/rg"]) == 2
    assert "not a built dataset" in capsys.readouterr().err


@pytest.mark.slow
def test_publish_space_sets_the_results_variable_once(writer, capsys):
    args = ["publish", "space", "--repo", f"{ORG}/leaderboard", "--results", f"{ORG}/results"]
    assert main(args) == 0
    assert f"set variable REXRANK_RESULTS={ORG}/results" in capsys.readouterr().out
    files = writer.files(f"{ORG}/leaderboard", "space")
    for path in ("app.py", "README.md"):
        assert files[path] == (SPACE_DIR / path).read_bytes()
    assert f"rexrank=={__version__}\n" in files["requirements.txt"].decode()
    settings = writer.settings(f"{ORG}/leaderboard", "space")
    assert settings["sdk"] == "gradio" and settings["variables"] == {"REXRANK_RESULTS": f"{ORG}/results"}

    commits = writer.commits(f"{ORG}/leaderboard", "space")
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == f"{ORG}/leaderboard (space): up to date"
    assert writer.commits(f"{ORG}/leaderboard", "space") == commits
    other = ["publish", "space", "--repo", f"{ORG}/leaderboard", "--results", f"{ORG}/other"]
    assert main([*other, "--dry-run"]) == 0
    assert f"would update\n  set variable REXRANK_RESULTS={ORG}/other" in capsys.readouterr().out
    assert writer.settings(f"{ORG}/leaderboard", "space")["variables"]["REXRANK_RESULTS"] == f"{ORG}/results"
    assert main(other) == 0  # the variable changes; the files did not, so no commit
    assert writer.settings(f"{ORG}/leaderboard", "space")["variables"]["REXRANK_RESULTS"] == f"{ORG}/other"
    assert writer.commits(f"{ORG}/leaderboard", "space") == commits


@pytest.mark.slow
def test_an_interrupted_publish_is_finished_by_running_it_again(writer, monkeypatch, capsys):
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda seconds: None)  # the client's retry waits
    writer.commits_fail = True  # the Hub goes away at the commit: the Space exists, its files never landed
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2"]) == 2
    err = capsys.readouterr().err
    assert f"{ORG}/bleu2: could not upload (503" in err and "Traceback" not in err
    assert writer.commits(f"{ORG}/bleu2", "space") == ["initial commit"]
    writer.commits_fail = False
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2", "--dry-run"]) == 0
    assert f"{ORG}/bleu2 (space): would update\n  add README.md\n" in capsys.readouterr().out
    assert main(["publish", "metrics", "--org", ORG, "--only", "bleu2"]) == 0
    assert len(writer.commits(f"{ORG}/bleu2", "space")) == 2
    assert "bleu2.py" in writer.files(f"{ORG}/bleu2", "space")


@pytest.mark.slow
def test_private_dataset_made_private_before_upload_and_read_with_the_token(writer, tmp_path, capsys):
    import datasets
    from huggingface_hub import HfApi

    folder, rows = _built(tmp_path, "mimic-cxr")
    HfApi().create_repo(f"{ORG}/mimic", repo_type="dataset")  # an existing public repo
    assert main(["publish", "dataset", "mimic-cxr", "--from", str(folder), "--repo", f"{ORG}/mimic", "--private"]) == 0
    assert "  set private: True" in capsys.readouterr().out
    assert writer.settings(f"{ORG}/mimic", "dataset") == {"private": True, "gated": False}
    writes = [p for m, p in writer.requests if m in ("PUT", "POST") and f"{ORG}/mimic" in p]
    assert writes.index(f"/api/datasets/{ORG}/mimic/settings") < writes.index(f"/api/datasets/{ORG}/mimic/commit/main")
    loaded = datasets.load_dataset(f"{ORG}/mimic", "findings_impression", split="test", token="hf_w")
    assert len(loaded) == len(rows)
