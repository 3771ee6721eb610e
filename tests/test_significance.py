"""No silent wrong answers from `rexrank compare`: every per-study table records what its scores are of (dataset,
split, task, each metric's signature point key) in its parquet metadata; tables of different test sets or tasks are
refused in one line, even on the same study ids; a metric made otherwise in one table is left out; a folder, a
missing file or a file that is not parquet is one line naming it, never a pyarrow traceback."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from fixtures.outputs import written

from rexrank import demo, per_study
from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.results import Result
from rexrank.significance import alike

STUDIES = [json.loads(line) for line in demo.DATASET.read_text().splitlines()]
WITH_FINDINGS = [s for s in STUDIES if s["findings"] and s["impression"]]  # in both tasks: the same study ids


@pytest.fixture
def same_ids(tmp_path):
    """A split whose every study has findings and an impression, and predictions of both tasks for it: a findings
    table and a findings+impression table over exactly the same study ids."""
    split = tmp_path / "split.jsonl"
    split.write_text("".join(json.dumps(s) + "\n" for s in WITH_FINDINGS))
    wanted = {s["study_id"] for s in WITH_FINDINGS}
    tables = {}
    for task in ("findings", "findings_impression"):
        lines = [line for line in demo.predictions("demo-careful", task).read_text().splitlines()
                 if json.loads(line)["study_id"] in wanted]
        predictions = tmp_path / f"careful.{task}.jsonl"
        predictions.write_text("\n".join(lines) + "\n")
        assert main(["score", "--predictions", str(predictions), "--dataset", str(split), "--task", task,
                     "--metrics", "bleu2", "--out", str(tmp_path / "out"), "--quiet"]) == 0
        tables[task] = written(tmp_path / "out", f"split.{task}.per_study.parquet")
    return tables


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()


def test_a_table_records_what_its_scores_are_of(same_ids):
    table = same_ids["findings"]
    recorded = json.loads(pq.read_metadata(table).metadata[b"rexrank"])
    result = Result.read(written(table.parent, "split.findings.json"))
    assert recorded == {"dataset": "split", "split": "test", "task": "findings",
                        "signatures": {"bleu2": result.metrics["bleu2"].signature.point_key},
                        "rexrank": result.rexrank_version}
    frame, made = per_study.read(table)
    assert made.task == "findings" and list(frame.columns) == ["study_id", "bleu2"]
    assert result.companions["per_study.parquet"]  # the table the result names is this one, metadata and all


def test_findings_against_findings_impression_on_the_same_ids_is_refused_in_one_line(same_ids, capsys):
    a, b = same_ids["findings"], same_ids["findings_impression"]
    assert set(pd.read_parquet(a)["study_id"]) == set(pd.read_parquet(b)["study_id"])  # what fooled it before
    assert main(["compare", str(a), str(b), "--trials", "50"]) == 2
    assert one_line(capsys) == (f"rexrank: error: {a} is split test · findings, {b} is split test · "
                                "findings_impression: a paired test compares two systems on the same test set and task")


def test_folders_missing_files_and_other_files_are_one_line_naming_them(same_ids, tmp_path, capsys):
    out = same_ids["findings"].parent
    assert main(["compare", str(out), str(out)]) == 2
    assert one_line(capsys) == (f"rexrank: error: {out}: 2 results (split findings of 'careful', split "
                                "findings_impression of 'careful'): choose one with --dataset, --task or --model-name")
    assert main(["compare", str(tmp_path / "gone.parquet"), str(same_ids["findings"])]) == 2
    assert one_line(capsys) == f"rexrank: error: {tmp_path / 'gone.parquet'}: no such per-study table, result or " \
                               "--out folder"
    result = written(out, "split.findings.json")  # a result JSON stands for its table
    assert main(["compare", str(result), str(same_ids["findings"])]) == 0
    capsys.readouterr()
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "empty"), str(same_ids["findings"])]) == 2
    assert "no result of rexrank score there (it holds: none)" in one_line(capsys)


def write(path, about, **columns):
    ids = [f"s{i}" for i in range(30)]
    frame = pd.DataFrame({"study_id": ids, **{k: [v + 0.01 * (i % 7) for i in range(30)] for k, v in columns.items()}})
    return per_study.write(frame, path, about)


def test_a_metric_made_otherwise_is_left_out_and_one_made_alike_is_compared(tmp_path, capsys):
    made = per_study.About("iu-xray", "test", "findings", {"bleu2": "bleu2:1|x", "bertscore": "bertscore:1|L5"})
    other = per_study.About("iu-xray", "test", "findings", {"bleu2": "bleu2:1|x", "bertscore": "bertscore:1|L9"})
    a = write(tmp_path / "a.parquet", made, bleu2=0.5, bertscore=0.4)
    b = write(tmp_path / "b.parquet", other, bleu2=0.3, bertscore=0.2)
    assert main(["compare", str(a), str(b), "--trials", "50"]) == 0
    out, err = capsys.readouterr()
    assert err == ("rexrank: warning: not compared, made otherwise in A than in B (their signatures differ): bertscore "
                   "(e.g. bertscore: A bertscore:1|L5, B bertscore:1|L9)\n")
    rows = [line.split()[0] for line in out.splitlines()[4:]]
    assert rows == ["bleu2"] and "30 paired studies · iu-xray test · findings" in out

    only = write(tmp_path / "c.parquet", per_study.About("iu-xray", "test", "findings", {"bertscore": "b:1|L9"}),
                 bertscore=0.2)
    alone = write(tmp_path / "d.parquet", per_study.About("iu-xray", "test", "findings", {"bertscore": "b:1|L5"}),
                  bertscore=0.4)
    assert main(["compare", str(alone), str(only)]) == 2
    assert "no metric made alike in both (signatures differ: bertscore): nothing to compare" in capsys.readouterr().err


def test_other_test_sets_or_splits_are_refused_and_unrecorded_tables_are_compared_with_a_warning(tmp_path, capsys):
    mimic = per_study.About("mimic-cxr", "test", "findings", {"bleu2": "k"})
    for other in (per_study.About("iu-xray", "test", "findings", {"bleu2": "k"}),
                  per_study.About("mimic-cxr", "valid", "findings", {"bleu2": "k"})):
        with pytest.raises(InputError, match="a paired test compares two systems on the same test set and task"):
            alike(mimic, other)
    assert alike(mimic, mimic).metrics == ("bleu2",) and not alike(mimic, mimic).unchecked

    a = write(tmp_path / "a.parquet", mimic, bleu2=0.5)
    old = tmp_path / "old.parquet"
    pd.read_parquet(a).assign(bleu2=0.2).to_parquet(old, index=False)  # as rexrank wrote tables before
    assert main(["compare", str(a), str(old), "--trials", "50"]) == 0
    assert capsys.readouterr().err == (f"rexrank: warning: {old} records no dataset, task or signatures (written by an "
                                       "older rexrank, or by hand): that both are of the same test set, task and "
                                       "settings is not checked\n")


def test_a_sharded_run_and_its_merge_record_it_too(tmp_path):
    for i in range(2):
        assert main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                     str(demo.DATASET), "--task", "findings", "--metrics", "bleu2", "--out", str(tmp_path / "s"),
                     "--quiet", "--shard", f"{i}/2"]) == 0
    shard = tmp_path / "s" / "dataset.findings.demo-careful.shard-0-of-2.parquet"
    assert json.loads(pq.read_metadata(shard).metadata[b"rexrank"])["task"] == "findings"
    assert main(["merge", *map(str, sorted((tmp_path / "s").glob("*.parquet"))), "--out", str(tmp_path / "m")]) == 0
    _, made = per_study.read(written(tmp_path / "m", "dataset.findings.per_study.parquet"))
    assert (made.dataset, made.split, made.task, list(made.signatures)) == ("dataset", "test", "findings", ["bleu2"])


def test_a_p_value_at_its_floor_says_it_is_below_it(tmp_path, capsys):
    """No resample as extreme as the data's: p is 1/(trials + 1), which 4 places round to 0.0001 of 10,000 trials;
    it is written as the bound it is, in rexrank compare and on the board alike (same PairedTest.p_text)."""
    from rexrank import stats

    a, b = [0.9] * 40, [0.1] * 40  # every study favours A
    boot = stats.paired_bootstrap(a, b, resamples=10_000, seed=0)
    assert (boot.p_value, boot.p_text) == (1 / 10_001, "<0.0001")
    assert stats.permutation_test(a, b, trials=200, seed=0).p_text == "<0.005"
    assert stats.paired_bootstrap([0.9, 0.1] * 20, [0.1, 0.9] * 20, resamples=200, seed=0).p_text == "1.0000"
    made = per_study.About("iu-xray", "test", "findings", {"bleu2": "bleu2:1"})
    ids = [f"s{i}" for i in range(40)]
    for name, values in (("a", a), ("b", b)):
        per_study.write(pd.DataFrame({"study_id": ids, "bleu2": values}), tmp_path / f"{name}.parquet", made)
    assert main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--trials", "10000"]) == 0
    [row] = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["bleu2"]]
    assert row[4:6] == ["<0.0001", "<0.0001"]
