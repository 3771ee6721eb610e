"""Hostile and careless input to the `rexrank` command: every one ends in exit 2 and one clear line naming the file,
field or option, never a traceback; Ctrl-C ends in one line and exit 130, and the same command run again resumes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.results import Result

DATASET = str(demo.DATASET)
STUDIES = [json.loads(line)["study_id"] for line in demo.DATASET.read_text().splitlines()]


def score(tmp_path, predictions, *extra, dataset=DATASET):
    return main(["score", "--predictions", str(predictions), "--dataset", str(dataset), "--task", "findings",
                 "--metrics", "bleu2", "--out", str(tmp_path / "out"), "--quiet", *extra])


def predictions_csv(path, big=""):
    rows = [f'{s},"No acute findings. {big if i == 0 else ""}"' for i, s in enumerate(STUDIES)]
    path.write_text("study_id,prediction\n" + "\n".join(rows) + "\n")
    return path


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("rexrank: error:")]
    return line


@pytest.mark.slow
def test_a_report_over_the_csv_modules_field_limit_scores_as_in_json(tmp_path, capsys):
    big = "Heart size is normal. " * 500_000  # 11 MB in one field; the csv module stops at 128 KiB by default
    assert score(tmp_path, predictions_csv(tmp_path / "big.csv", big)) == 0
    assert Result.read(written(tmp_path / "out", "dataset.findings.json")).counts["scored"] == 45


NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(("name", "text", "said"), [
    ("deep.jsonl", '{"study_id": "demo-0001", "prediction": ' + NESTED + "}\n", "deep.jsonl:1: JSON nested too deeply"),
    ("deep.json", '{"demo-0001": ' + NESTED + "}", "deep.json: JSON nested too deeply"),
    ("digits.jsonl", '{"study_id": ' + "9" * 5000 + ', "prediction": "x"}\n', "digits.jsonl:1: not valid JSON"),
    ("digits.json", '{"demo-0001": {"model_prediction": ' + "7" * 5000 + "}}", "digits.json: not valid JSON"),
])
def test_hostile_predictions_files_end_in_one_clear_line(tmp_path, capsys, name, text, said):
    path = tmp_path / name
    path.write_text(text)
    assert score(tmp_path, path) == 2
    assert said in error_line(capsys)


@pytest.mark.parametrize("name", ["surrogate.jsonl", "surrogate.json"])
def test_a_lone_surrogate_in_a_prediction_is_refused_naming_the_study(tmp_path, capsys, name):
    """JSON can spell half a UTF-16 pair (\\ud800); no UTF-8 writer can write it: it ended in UnicodeEncodeError."""
    texts = {s: "No acute findings." for s in STUDIES} | {STUDIES[3]: "Clear \ud800 lungs."}
    path = tmp_path / name
    path.write_text("".join(json.dumps({"study_id": s, "prediction": t}) + "\n" for s, t in texts.items())
                    if name.endswith("l") else json.dumps({s: {"model_prediction": t} for s, t in texts.items()}))
    assert score(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert f"study {STUDIES[3]}: prediction is not valid Unicode (a lone surrogate, \\ud800)" in err
    assert "Traceback" not in err


def test_a_split_json_with_other_field_names_says_which_are_expected(tmp_path, capsys):
    split = tmp_path / "split.json"
    split.write_text(json.dumps({s: {"findings": "x.", "impression": "y."} for s in STUDIES}))
    assert score(tmp_path, demo.predictions("demo-careful", "findings"), dataset=split) == 2
    line = error_line(capsys)
    assert "no study has section_findings or section_impression" in line and "found: findings, impression" in line


@pytest.mark.parametrize(("target", "said"), [("/etc/passwd", "not a readable parquet file"),
                                              ("/dev/zero", "not a regular file")])
def test_a_dataset_folder_whose_parquet_links_to_a_system_file_is_one_line(tmp_path, capsys, target, said):
    if not Path(target).exists():
        pytest.skip(f"no {target} here")
    folder = tmp_path / "split"
    folder.mkdir()
    (folder / "test.parquet").symlink_to(target)
    assert score(tmp_path, demo.predictions("demo-careful", "findings"), dataset=folder) == 2
    line = error_line(capsys)  # one line, no traceback (pyarrow's own words after it may change)
    assert line.startswith(f"rexrank: error: {folder / 'test.parquet'} (a link to {target}): {said} (")
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize(("option", "said"), [
    (["--resamples", "0"], "--resamples: expected a whole number from 1"),
    (["--resamples", "x"], "--resamples: expected a whole number from 1"),
    (["--seed", "-1"], "--seed: expected a whole number from 0"),
    (["--shard", "47/48"], "--shard 47/48 holds no study: 45 studies in 48 shards"),
    (["--batch-size", "0"], "--batch-size: expected a whole number from 1"),
])
def test_options_out_of_range_end_in_one_clear_line(tmp_path, capsys, option, said):
    with pytest.raises(SystemExit) as exited:  # argparse's own exit for its own checks
        code = score(tmp_path, demo.predictions("demo-careful", "findings"), *option)
        raise SystemExit(code)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_an_unknown_metric_in_a_result_file_is_named(tmp_path, capsys):
    assert score(tmp_path, demo.predictions("demo-careful", "findings"), "--dataset-name", "mimic-cxr") == 0
    path = written(tmp_path / "out", "mimic-cxr.findings.json")
    data = json.loads(path.read_text())
    data["metrics"]["bleu5"] = data["metrics"]["bleu2"]
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["submit", "--results", str(tmp_path / "out"), "--name", "X", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{path.name}: unknown metric 'bleu5'" in err and "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_is_one_line_exit_130_and_the_rerun_resumes(tmp_path, monkeypatch, capsys, local_models):
    """Ctrl-C while BERTScore computes: the features of the chunks done are cached, the rerun computes the rest and
    ends with the result an uninterrupted run gives."""
    from rexrank import cache
    from rexrank.scorers.bertscore import BertScore

    monkeypatch.setattr(cache, "CHUNK", 8)
    real, calls = BertScore.features, []

    def interrupted(self, texts):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, texts)

    monkeypatch.setattr(BertScore, "features", interrupted)
    run = ["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset", DATASET,
           "--task", "findings", "--metrics", "bertscore", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(run) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rexrank: interrupted") and "run the same command again" in err
    assert not (tmp_path / "out").exists()  # nothing half-written
    done = sum(calls[:2])
    assert main(run) == 0
    assert sum(calls[3:]) == sum(calls) - done - calls[2]  # the rerun computed only what was not cached
    resumed = Result.read(written(tmp_path / "out", "dataset.findings.json"))
    monkeypatch.setattr(BertScore, "features", real)
    monkeypatch.setenv("REXRANK_CACHE", "off")
    assert main([*run[:-3], "--out", str(tmp_path / "again"), "--quiet"]) == 0
    fresh = Result.read(written(tmp_path / "again", "dataset.findings.json"))
    assert resumed.metrics["bertscore"].value == fresh.metrics["bertscore"].value


@pytest.mark.subprocess
@pytest.mark.slow
def test_ctrl_c_as_a_real_signal_in_a_real_process(tmp_path):
    """SIGINT to `python -m rexrank.cli` while it waits on a judge that never answers: one line, exit 130."""
    import signal
    import socket
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepts, never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    process = subprocess.Popen(
        [sys.executable, "-m", "rexrank.cli", "score", "--predictions", str(demo.predictions("demo-careful",
                                                                                                "findings")),
         "--dataset", DATASET, "--task", "findings", "--metrics", "fineradscore", "--judge-url", url, "--judge-model",
         "m", "--out", str(tmp_path / "out"), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**__import__("os").environ,
                                                                        "REXRANK_CACHE": "off"},
        # As a terminal starts it: SIGINT at its default. A shell starts a background job (`.ci/run ... &`) with
        # SIGINT ignored, a child inherits that, and Python then installs no KeyboardInterrupt handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        conn = None
        listener.settimeout(60)
        conn, _ = listener.accept()  # the judge's first request: the run is under way
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        listener.close()
        if conn is not None:
            conn.close()
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().startswith("rexrank: interrupted")
