import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.results import Result
from rexrank.scorers import JUDGED, METRICS, spec
from rexrank.scorers.bleu import bleu2_pair, ngrams

DATASET = str(demo.DATASET)


def weights(name: str) -> list[str]:
    """The models a metric needs, its components' included, as the registry declares them."""
    made = spec(name)
    return list(dict.fromkeys([*made.models, *(m for need in made.needs for m in weights(need))]))


def needing_weights(names) -> list[str]:
    """Those of `names` (in order) that need weights: what does not run on a machine without any, the components
    a composite needs before it (the order the scorer asks for them)."""
    asked = dict.fromkeys(n for name in names for n in (*spec(name).needs, name))
    return [n for n in asked if weights(n)]


def model_lines(skipped) -> list[str]:
    """A line per missing model, in the order the skipped metrics first name it, each with every skipped metric it
    takes down: a scorer is stopped by the first of its own models missing (its download key is the model's key,
    lower-cased), a metric made from others by each of its parts'."""
    from rexrank.models import MODELS

    takes_down: dict[str, list[str]] = {}
    for name in skipped:
        for part in spec(name).needs or (name,):
            if spec(part).models:
                takes_down.setdefault(spec(part).models[0], []).append(name)
    return [f"    {key.lower()}: {MODELS[key].what.split(' (')[0]}, for {', '.join(dict.fromkeys(names))}"
            for key, names in takes_down.items()]


def download_line(names) -> str:
    return (f"not run here: {', '.join(names)} (weights not downloaded): `rexrank models download --all` fetches "
            "them")


def score(tmp_path, *extra, task="findings", system="demo-careful"):
    return main(["score", "--predictions", str(demo.predictions(system, task)), "--dataset", DATASET,
                 "--task", task, "--out", str(tmp_path), "--quiet", *extra])


def test_score_writes_result_and_per_study_table(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu2", "--model-name", "Careful", "--resamples", "200") == 0
    out = capsys.readouterr().out
    assert "Careful · dataset test · findings · 45 studies scored, 3 left out by the task" in out
    assert ("bleu2: bleu2:1|tok:lower+dot|smooth:method1:eps=0.1|refs:collapsed-ws|missing:left-out|preds:as-given|"
            "boot:200:seed=0|rexrank:0.1.0") in out
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    assert result.counts == {"split_studies": 48, "scored": 45, "dropped_by_task": 3, "empty_predictions": 0,
                             "ignored_predictions": 3}
    assert len(table) == 45 and result.metrics["bleu2"].value == pytest.approx(table["bleu2"].mean(), rel=1e-15)
    # each per-study score is the study's own BLEU-2, whatever the others are
    truth = {r["study_id"]: r["findings"] for r in map(json.loads, demo.DATASET.read_text().splitlines())}
    preds = {r["study_id"]: r["prediction"] for r in
             map(json.loads, demo.predictions("demo-careful", "findings").read_text().splitlines())}
    expected = [bleu2_pair(ngrams(preds[s]), ngrams(truth[s])) for s in table["study_id"]]
    np.testing.assert_array_equal(table["bleu2"].to_numpy(), expected)


def test_a_metric_that_cannot_run_says_why_and_the_others_still_run(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu2,radcliq_v1") == 3
    out = capsys.readouterr().out
    assert f"  {download_line(needing_weights(['bleu2', 'radcliq_v1']))}\n" in out
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    assert set(result.metrics) == {"bleu2"} and "radcliq_v1" in result.skipped


def test_without_weights_the_skipped_report_is_a_line_per_missing_model_and_one_command(tmp_path, capsys):
    assert score(tmp_path) == 3  # the default metrics, no weights here
    out = capsys.readouterr().out
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    not_run = list(result.skipped)  # in the order they were asked for; every other metric of the default ran
    assert not_run and set(result.metrics) == set(METRICS) - set(not_run) - set(JUDGED)  # judged: asked for by name
    report = "  not run here: " + out.split("  not run here: ")[1].split("  bleu2: ")[0]  # before the signatures
    assert set(not_run) == set(needing_weights(m for m in METRICS if m not in JUDGED))
    first, *per_model, last = report.splitlines()
    assert first == f"  {download_line(not_run)}"
    assert last == "  (the reasons in full: the result JSON's skipped_metrics)"
    assert per_model == model_lines(not_run)
    assert "StanfordAIMI" not in out and len(report) < 800  # each name at most twice (654); was 3,895
    skipped = result.skipped
    assert "Run `rexrank models download radgraph` where there is network" in skipped["radgraph"]
    needs = [n for n in spec("radcliq_v1").needs if weights(n)]  # the components that did not run
    assert skipped["radcliq_v1"].startswith(f"needs {', '.join(needs)} ({needs[0]}: ")


def test_a_metric_is_named_by_its_name_or_its_module_s(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu2,radcliq") == 3  # the module's Space name: RadCliQ-v1
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    assert set(result.metrics) == {"bleu2"} and "radcliq_v1" in result.skipped and "radcliq" not in result.skipped
    assert main(["metrics"]) == 0
    listed = capsys.readouterr().out
    assert "also named radcliq" in listed and "also named sembscore" in listed


def test_empty_prediction_warns_and_scores_zero(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu2", system="demo-template") == 0
    assert "1 empty prediction(s), scored as the empty report: demo-0006" in capsys.readouterr().err
    assert Result.read(written(tmp_path, "dataset.findings.json")).warnings[0].endswith(
        "demo-template.findings.jsonl: 1 empty prediction(s), scored as the empty report: demo-0006")
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet")).set_index("study_id")
    assert table.loc["demo-0006", "bleu2"] == 0.0


@pytest.mark.parametrize(("predictions", "message"), [
    ('{"study_id": "demo-0001", "prediction": "x"}\n', "demo-0002: in the split but has no prediction"),
    ('{"study_id": "demo-0001", "prediction": null}\n', "demo-0001: prediction is null/NaN"),
    ('{"study_id": "nope", "prediction": "x"}\n', "study nope: predicted but not in the split"),
    ('{"study_id": "demo-0001", "prediction": ["x"]}\n', "demo-0001: prediction must be text, got list"),
    ('{"study_id": "demo-0001", "prediction": "x"}\n' * 2, "study demo-0001 is predicted more than once"),
    ('not json\n', "p.jsonl:1: not valid JSON"),
    ('{"id": "demo-0001", "report": "x"}\n', "p.jsonl:1: expected the keys study_id and prediction (or "
                                             "model_prediction, or report, or findings and impression), found 'id', "
                                             "'report'"),
    ('{"study_id": "demo-0001", "text": "x"}\n', "found 'study_id', 'text'"),
])
def test_bad_predictions_exit_2_naming_the_study_and_write_nothing(tmp_path, capsys, predictions, message):
    path = tmp_path / "p.jsonl"
    path.write_text(predictions)
    out = tmp_path / "out"
    code = main(["score", "--predictions", str(path), "--dataset", DATASET, "--task", "findings",
                 "--out", str(out), "--quiet"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_unknown_metric_and_missing_files_exit_2(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu5") == 2
    known = ", ".join(METRICS)  # every metric of the registry, in its order
    assert f"unknown metric 'bleu5': known metrics are {known}" in capsys.readouterr().err
    assert main(["score", "--predictions", str(tmp_path / "x.jsonl"), "--dataset", DATASET, "--task",
                 "findings"]) == 2
    assert "x.jsonl: no such predictions file" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_writes_every_system_and_task(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json") if "radrbench" not in p.parts)
    assert files == [f"{key}/rexrank-demo.{t}.{card['name']}.json" for key, card in sorted(demo.systems().items())
                     for t in ("findings", "findings_impression")]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("radrbench/*")) == [
        f"{m}/radrbench/radrbench-cxr.{f}" for m in ("demo-guesser", "demo-reasoner")
        for f in ("accuracy.json", "per_item.parquet")]
    assert "== RadRBench-CXR (synthetic demo items) · 25 items" in out
    board = out.split("== rexrank-demo test · findings ·")[1].splitlines()
    assert [line.split()[0] for line in board[2:5]] == ["Demo-Careful", "Demo-Shuffled", "Demo-Template"]
    careful = Result.read(written(tmp_path / "demo-careful", "rexrank-demo.findings.json"))
    template = Result.read(written(tmp_path / "demo-template", "rexrank-demo.findings.json"))
    assert careful.metrics["bleu2"].low > template.metrics["bleu2"].high  # clearly separated systems
    # no weights here: one line says what did not run and the one command that fetches it; the board says it is
    # not ranked by its own metric
    [skipped] = [line for line in out.splitlines() if line.startswith("not run here")]
    assert skipped.startswith("not run here: ") and set(skipped.split(": ", 1)[1].split(" (")[0].split(", ")) == set(
        needing_weights(m for m in METRICS if m not in JUDGED))
    assert skipped.endswith(" (weights not downloaded): `rexrank models download --all` fetches them")
    assert "ranked by bleu2 (1/RadCliQ-v1, the board's ranking, not run here)" in out


@pytest.mark.subprocess
@pytest.mark.slow
def test_console_script_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "rexrank.cli", "metrics"], capture_output=True, text=True, check=True)
    what = done.stdout.split("\non this machine now")[0]  # then whether each runs here: tests/test_metrics_here.py
    lines = {line.split()[0]: line for line in what.splitlines() if not line.startswith(" ")}
    # a metric's convention (its tokens, whose implementation) on an indented line under it
    assert f"\n{' ' * len(max(lines, key=len))}   convention: {spec('bleu4').convention}\n" in what
    assert re.match(r"bleu2 +v1; dataset value: mean over studies;", lines["bleu2"])
    # a label F1 is no mean: it says what it is made of, and what it needs
    assert re.match(r"chexbert_micro_f1_14 v1 = f\(semb_score\); dataset value: F1 of the studies' summed TP/FP/FN;",
                    lines["chexbert_micro_f1_14"])
    assert len({line.index(" v") for line in lines.values()}) == 1  # one column for the versions


def test_compare_runs_both_paired_tests_on_the_same_studies(tmp_path, capsys):
    for system in ("demo-careful", "demo-template"):
        assert score(tmp_path / system, "--metrics", "bleu2", system=system) == 0
    a, b = (written(tmp_path / s, "dataset.findings.per_study.parquet") for s in ("demo-careful", "demo-template"))
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--trials", "500"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    delta = pd.read_parquet(a)["bleu2"].mean() - pd.read_parquet(b)["bleu2"].mean()
    assert row[0] == "bleu2" and float(row[1]) == pytest.approx(delta, abs=5e-5)
    assert row[-2:] == ["<0.002", "<0.002"]  # clearly different systems: no resample as extreme, p < 1/500

    assert score(tmp_path / "fi", "--metrics", "bleu2", task="findings_impression") == 0
    other_task = written(tmp_path / "fi", "dataset.findings_impression.per_study.parquet")
    assert main(["compare", str(a), str(other_task)]) == 2
    assert "findings_impression: a paired test compares two systems on the same test set and task" in (
        capsys.readouterr().err)
    unrecorded = tmp_path / "unrecorded.parquet"  # a table by hand, saying nothing of what it is: its studies differ
    pd.read_parquet(other_task).to_parquet(unrecorded, index=False)
    assert main(["compare", str(a), str(unrecorded)]) == 2
    assert "cover different studies (3 differ, e.g. demo-0046)" in capsys.readouterr().err


def test_compare_pairs_judged_scores_only_where_the_judge_scored_both_systems(tmp_path, capsys):
    ids = [f"s{i}" for i in range(40)]
    a = pd.DataFrame({"study_id": ids, "green": [0.9] * 40})
    b = pd.DataFrame({"study_id": ids, "green": [0.1] * 40})
    a.loc[3, "green"] = b.loc[7, "green"] = float("nan")  # unparseable answers, one per system
    a.loc[10:, "green"] = 0.5  # so the pair's mean differs from either system's own mean
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    assert main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--trials", "200"]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    both = a["green"].notna() & b["green"].notna()
    assert row.split()[0] == "green" and "(38 studies judged for both)" in row
    assert float(row.split()[1]) == pytest.approx(a["green"][both].mean() - b["green"][both].mean(), abs=5e-5)


def test_hub_dataset_offline_is_a_clear_error(tmp_path, capsys):
    code = main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")),
                 "--dataset", "rexrank/mimic-cxr", "--task", "findings", "--out", str(tmp_path)])
    assert code == 2
    assert "rexrank/mimic-cxr: could not load split 'test' from the Hub" in capsys.readouterr().err


def test_a_scorer_without_weights_is_skipped_in_one_line_and_the_rest_is_written(tmp_path, capsys, monkeypatch):
    from rexrank import scorers
    from rexrank.scorers.base import MetricUnavailable, Scorer
    from rexrank.scorers.spec import spec_of

    class NeedsWeights(Scorer):
        name, title, version = "weighty", "Weighty", "1"

        def features(self, texts):
            raise MetricUnavailable("weights for weighty not found offline: set REXRANK_MODEL_WEIGHTY=/path")

    monkeypatch.setitem(scorers.REGISTRY, "weighty", spec_of(NeedsWeights, "scorer"))  # a registry line, and its views
    monkeypatch.setitem(scorers.SCORERS, "weighty", NeedsWeights)
    monkeypatch.setattr(scorers, "METRICS", (*scorers.METRICS, "weighty"))
    assert score(tmp_path, "--metrics", "weighty,bleu2") == 3
    assert "  not run here: weighty: weights for weighty not found offline: set REXRANK_MODEL_WEIGHTY=/path" in (
        capsys.readouterr().out)
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    assert set(result.metrics) == {"bleu2"} and result.skipped["weighty"].startswith("weights for weighty")
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    assert list(table.columns) == ["study_id", "bleu2"]


@pytest.mark.slow
def test_score_runs_the_model_metrics(local_models, tmp_path, capsys, tiny_roberta, monkeypatch):
    monkeypatch.delenv("REXRANK_MODEL_BERTSCORE")  # given on the command line instead
    code = score(tmp_path, "--metrics", "bleu2,bertscore,semb_score", "--batch-size", "4",
                 "--model", f"bertscore={tiny_roberta}")
    assert code == 0, capsys.readouterr()
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    assert list(table.columns) == ["study_id", "bleu2", "bertscore", "semb_score"] and len(table) == 45
    assert set(result.extras["chexbert_label_f1"]) == {"micro_f1_14", "macro_f1_14", "micro_f1_5", "macro_f1_5"}
    assert "chexbert_label_f1: micro_f1_14 " in capsys.readouterr().out
    for name in ("bertscore", "semb_score"):
        metric = result.metrics[name]
        assert metric.value == pytest.approx(table[name].mean()) and metric.low < metric.value < metric.high
        assert "local:" in str(metric.signature) and "boot:1000:seed=0" in str(metric.signature)
    assert main(["score", "--predictions", "x", "--dataset", DATASET, "--task", "findings",
                 "--model", "gpt=/x"]) == 2
    assert "unknown model 'GPT'" in capsys.readouterr().err


@pytest.mark.slow
def test_radcliq_v1_end_to_end_from_its_four_components(local_models, tmp_path, capsys):
    from rexrank.scorers.radcliq import COMPONENTS, RADCLIQ_V1

    assert score(tmp_path, "--metrics", "radcliq_v1", "--resamples", "200") == 0, capsys.readouterr().err
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    assert set(COMPONENTS) <= set(table.columns) and set(COMPONENTS) <= set(result.metrics)
    per_study = RADCLIQ_V1([table[c].to_numpy() for c in COMPONENTS])
    np.testing.assert_allclose(table["radcliq_v1"], per_study, rtol=0, atol=1e-12)
    radcliq = result.metrics["radcliq_v1"]
    assert radcliq.statistic == "inverse_mean" and radcliq.mean == pytest.approx(per_study.mean())
    assert radcliq.value == pytest.approx(1 / per_study.mean())
    assert "radgraph:1" in str(radcliq.signature) and "bertscore:1@local:" in str(radcliq.signature)


GREEN_ANSWER = ("[Explanation]:\nClose.\n\n[Clinically Significant Errors]:\n"
                "(a) False report of a finding in the candidate: 1. Effusion.\n"
                + "".join(f"({k}) Other: 0.\n" for k in "bcdef")
                + "\n[Clinically Insignificant Errors]:\n(a) False report of a finding in the candidate: 0.\n\n"
                "[Matched Findings]:\n3. Heart; lungs; bones.")


@pytest.mark.slow
def test_green_through_a_judge_endpoint_with_counts_per_study(tmp_path, fake_openai, monkeypatch, capsys):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    odd = json.loads(demo.predictions("demo-careful", "findings").read_text().splitlines()[0])
    fake_openai.replies = lambda prompt: "I cannot compare these." if odd["prediction"] in prompt else GREEN_ANSWER
    judge = ["--judge-url", fake_openai.url, "--judge-model", fake_openai.model]
    assert score(tmp_path, "--metrics", "green,bleu2", *judge) == 0
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    green = result.metrics["green"]
    # 45 studies, one answer unreadable: it counts 0, GREEN's worst, beside the mean over the 44 read
    assert green.value == pytest.approx(0.75 * 44 / 45) and green.n == 45
    assert result.extras["green"]["unparseable"] == 1 and result.extras["green"]["error_counts"]["matched"] == 132
    assert result.extras["green"]["judged"] == 44 and result.extras["green"]["judged_mean"] == pytest.approx(0.75)
    assert f"backend:judge:{fake_openai.model}" in str(green.signature)
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    row = table.set_index("study_id").loc[odd["study_id"]]
    assert row["green"] == 0.0 and pd.isna(row["green.significant_a"]) and row["green.problem"] == "unparseable"
    assert (table["green.significant_a"].dropna() == 1).all() and fake_openai.calls == 45
    assert score(tmp_path, "--metrics", "green", *judge) == 0 and fake_openai.calls == 45  # the cache answers


@pytest.mark.slow
def test_green_on_a_vllm_server_takes_its_concurrency_from_the_kv_cache(tmp_path, fake_openai, monkeypatch, capsys):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    fake_openai.replies, fake_openai.delay = lambda prompt: GREEN_ANSWER, 0.02
    fake_openai.vllm = {"num_gpu_blocks": 384, "block_size": 16, "max_model_len": 2048}  # 3 requests of 2,048
    judge = ["--judge-url", fake_openai.url, "--judge-model", fake_openai.model]
    assert score(tmp_path, "--metrics", "green", *judge, "--judge-concurrency", "auto") == 0
    assert 1 < fake_openai.max_in_flight <= 3 and fake_openai.calls == 45
    assert "judge concurrency auto: 3; vLLM's KV cache holds 384 blocks" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        score(tmp_path, "--metrics", "green", *judge, "--judge-concurrency", "0")
    assert exit_.value.code == 2 and "'0': expected a whole number from 1, or auto" in capsys.readouterr().err


def test_green_refuses_credentialed_data_for_a_public_endpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    split = tmp_path / "mimic-cxr.jsonl"
    split.write_text(demo.DATASET.read_text())
    code = main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                 str(split), "--task", "findings", "--out", str(tmp_path / "out"), "--quiet", "--metrics", "green",
                 "--judge-url", "https://api.example.com/v1", "--judge-model", "gpt-4o"])
    assert code == 2 and "PhysioNet" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_all_means_the_metrics_that_need_no_judge(tmp_path):
    from rexrank.scorers import AVAILABLE, parse_metrics

    assert "green" not in parse_metrics("all") and set(parse_metrics("all")) == set(AVAILABLE)
    assert parse_metrics("green") == ["green"]


def test_every_option_of_every_command_says_what_it_is():
    """A user reads `rexrank CMD --help`: an option listed with no words (13 were, --seed and --out among them) makes
    them read the code."""
    import argparse

    from rexrank.cli import parser

    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = [f"{name} {' / '.join(option.option_strings)}" for name, command in commands.items()
              for option in command._actions if option.option_strings and not option.help]
    assert silent == []
    assert len(commands) >= 14  # the listing reached every command


def test_a_metric_option_changes_its_number_and_is_signed(tmp_path, capsys):
    """`--option METRIC.KEY=VALUE` reaches the scorer (its spec's options): another tokenisation, another number,
    signed; the other metrics keep their defaults."""
    assert score(tmp_path / "default", "--metrics", "bleu4,rouge_l") == 0
    assert score(tmp_path / "none", "--metrics", "bleu4,rouge_l", "--option", "bleu4.tokenize=none") == 0
    default, given = (Result.read(written(tmp_path / d, "dataset.findings.json")) for d in ("default", "none"))
    assert given.metrics["bleu4"].signature.settings["tok"] == "none" != default.metrics["bleu4"].signature.settings[
        "tok"]
    assert given.metrics["bleu4"].value != default.metrics["bleu4"].value
    assert given.metrics["rouge_l"] == default.metrics["rouge_l"]


@pytest.mark.parametrize(("option", "said"), [
    ("bleu4.tokenize=ptb", "bleu4.tokenize='ptb': tokenize must be one of r2gen, r2gen-mimic, r2gen-iu, none, not "
                           "'ptb'"),
    ("bleu4.tok=none", "'bleu4.tok=none': bleu4 has no option 'tok' (its options: tokenize)"),
    ("bertscore.layer=x", "'bertscore.layer=x': bertscore.layer is a number like 5, not 'x'"),
    ("bleu9.tokenize=none", "unknown metric 'bleu9'"),
    ("tokenize=none", "expected METRIC.KEY=VALUE"),
])
def test_a_bad_metric_option_is_one_line_and_exit_2(tmp_path, capsys, option, said):
    """Refused as it is read (argparse's usage and one line) or, for a value the scorer refuses, before any study is
    scored: exit 2, no traceback, nothing written."""
    try:
        code = score(tmp_path, "--metrics", "bleu4", "--option", option)
    except SystemExit as exit:  # argparse's own refusal
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and not list(tmp_path.glob("*.json"))


def test_leaderboard_help_says_a_score_out_folder_is_shown(capsys):
    with pytest.raises(SystemExit):
        main(["leaderboard", "--help"])
    assert "rexrank score --out folder" in " ".join(capsys.readouterr().out.split())
