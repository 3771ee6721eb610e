"""`rexrank score-radrbench`: accuracy per source and task on a built RadRBench-CXR dataset (synthetic items from the
builder's tests), with CIs, answer failures counted, and the output file's bad input named."""

import json

import pandas as pd
import pytest

from rexrank.board.aggregate import aggregate
from rexrank.board.radrbench import radrbench_table
from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.radrbench.score import load_items
from rexrank.rules import check_radrbench


def outputs(path, answers):
    path.write_text("".join(json.dumps({"config": c, "item_id": i, "output": o}) + "\n"
                            for (c, i), o in answers.items()))
    return path


@pytest.mark.slow
def test_accuracy_per_source_and_task_with_failures_counted(radrbench_built, tmp_path, capsys):
    folder = radrbench_built[0]
    items = load_items(folder)
    answers = {(c, i): f"<think>Looked.</think><answer>{a}</answer>"
               for c, i, a in zip(items["config"], items["item_id"], items["answer"])}
    binary = list(zip(*[items[items["task"] == "binary"][k] for k in ("config", "item_id")]))
    answers[binary[0]] = "<think>No tag at the end."  # no_answer_tag: wrong
    answers.pop(binary[1])  # no output at all: empty_output, wrong, warned
    capsys.readouterr()
    code = main(["score-radrbench", "--predictions", str(outputs(tmp_path / "model.jsonl", answers)),
                 "--dataset", str(folder), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0 and "1 item(s) have no output and are scored as empty outputs" in err
    report = json.loads((tmp_path / "out" / "radrbench-cxr.accuracy.json").read_text())
    rows = {(r["source"], r["task"]): r for r in report["rows"]}
    total = rows[("all", "all")]
    options = items[items["task"] != "multi_no_option"]  # the overall row: the option tasks (issue 46)
    assert len(options) < len(items) and rows[("all", "multi_no_option")]["items"] == len(items) - len(options)
    assert total["items"] == len(options) and total["correct"] == total["items"] - 2
    failed = [r for r in report["rows"] if r["source"] != "all" and r["correct"] < r["items"]]
    assert sum(r["items"] - r["correct"] for r in failed) == 2
    assert all(json.loads(r["failures"]) in ({"no_answer_tag": 1}, {"empty_output": 1}, {"empty_output": 1,
                                                                                            "no_answer_tag": 1})
               for r in failed)
    assert 0 <= total["low"] <= total["accuracy"] <= total["high"] <= 1
    assert report["signature"].startswith(
        "radrbench-accuracy:1|parser:answers-v1|unreadable:wrong|overall:option-tasks|boot:1000")
    per_item = pd.read_parquet(tmp_path / "out" / "radrbench-cxr.per_item.parquet")
    assert per_item["correct"].sum() == total["correct"] + rows[("all", "multi_no_option")]["correct"]
    assert "multi_no_option" in out and "all (options)" in out
    check_radrbench((tmp_path / "out" / "radrbench-cxr.accuracy.json").read_bytes())  # the rules accept it
    # RaTEScore's weights are not here: each free-text row says so, with no number
    free = [line for line in out.splitlines() if "RaTEScore not run here" in line]
    assert len(free) == items[items["task"] == "multi_no_option"]["source"].nunique() + 1
    assert all(" n/a " in line for line in free) and report["ratescore"] is None


@pytest.mark.slow
def test_a_free_text_answer_never_moves_the_overall_row(radrbench_built, tmp_path, capsys):
    """ChestX-Reasoner's strict all/all fell to .631 on free-text exact match .028: here every option answer is right
    and every free-text one wrong, and the overall row stays 1."""
    folder = radrbench_built[0]
    items = load_items(folder)
    answers = {(c, i): "<answer>nothing of the kind</answer>" if t == "multi_no_option" else f"<answer>{a}</answer>"
               for c, i, a, t in zip(items["config"], items["item_id"], items["answer"], items["task"])}
    assert main(["score-radrbench", "--predictions", str(outputs(tmp_path / "m.jsonl", answers)), "--dataset",
                 str(folder), "--out", str(tmp_path / "out")]) == 0
    rows = {(r["source"], r["task"]): r for r in json.loads(
        (tmp_path / "out" / "radrbench-cxr.accuracy.json").read_text())["rows"]}
    assert rows[("all", "all")]["accuracy"] == 1.0 and rows[("all", "multi_no_option")]["accuracy"] == 0.0
    assert "free-text item(s) have their exact match in rows of their own" in capsys.readouterr().err


@pytest.mark.slow
def test_unknown_and_repeated_items_are_named(radrbench_built, tmp_path, capsys):
    folder = radrbench_built[0]
    first = load_items(folder).iloc[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"config": first["config"], "item_id": "nope", "output": "<answer>A</answer>"}) + "\n")
    assert main(["score-radrbench", "--predictions", str(bad), "--dataset", str(folder)]) == 2
    assert f"line 1 (item {first['config']}/nope): the test set has no such item" in capsys.readouterr().err
    record = {"config": first["config"], "item_id": first["item_id"], "output": "<answer>A</answer>"}
    bad.write_text((json.dumps(record) + "\n") * 2)
    assert main(["score-radrbench", "--predictions", str(bad), "--dataset", str(folder)]) == 2
    assert f"line 2 (item {first['config']}/{first['item_id']}): given twice (also line 1)" in capsys.readouterr().err
    with pytest.raises(Exception, match="no config nowhere.single"):
        load_items(folder, configs=["nowhere.single"])


def scripted_judge(prompt: str) -> str:
    """The judge's four kinds of answer, told apart by the count each prompt asks for: Rc 1/2, Rf 2/2, Re 3/4; an
    output saying "unsure" gets an effectiveness reply that is not JSON (its item is not read)."""
    if "effective_count" in prompt and "unsure" in prompt:
        return "I cannot count these steps."
    if "effective_count" in prompt:
        return '```json\n{"effective_count": 3, "ineffective_count": 1}\n```'
    if "recalled_count" in prompt:
        return '{"recalled_count": 1}'
    if "correct_count" in prompt:
        return '{"correct_count": 2}'
    return json.dumps({"key_conclusion": [{"observation": "effusion", "status": "absent"},
                                          {"observation": "heart", "status": "normal"}]})


@pytest.mark.slow
def test_radrscore_runs_on_the_items_with_reasoning_when_a_judge_is_given(radrbench_built, tmp_path, capsys,
                                                                          fake_openai, monkeypatch):
    folder = radrbench_built[0]
    fake_openai.replies = scripted_judge
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    items = load_items(folder)
    answers = {(c, i): "<think>The angles are sharp.</think><answer>A</answer>"
               for c, i in zip(items["config"], items["item_id"])}
    unsure = next(k for k, report in zip(answers, items["original_report"].notna()) if report)
    answers[unsure] = "<think>I am unsure.</think><answer>A</answer>"
    capsys.readouterr()
    code = main(["score-radrbench", "--predictions", str(outputs(tmp_path / "model.jsonl", answers)),
                 "--dataset", str(folder), "--out", str(tmp_path / "out"), "--judge-url", fake_openai.url,
                 "--judge-model", fake_openai.model])
    out, err = capsys.readouterr()
    assert code == 0 and "RadRScore, the board's figures (items with reasoning annotations" in out
    assert "RadRScore over the judged items only (the authors' figures" in out
    assert "1 item(s) whose replies could not be read (1 unparseable" in err
    report = json.loads((tmp_path / "out" / "radrbench-cxr.accuracy.json").read_text())["radrscore"]
    total = next(r for r in report["rows"] if r["source"] == "all")
    reasoned = int(items["original_report"].notna().sum())
    assert total["items"] == reasoned > 1 and total["radrscore_n"] == reasoned - 1 and report["unparseable"] == 1
    # the board's figures: the unread item counts 0 in each part; the judged items': it is left out
    read = (reasoned - 1) / reasoned
    assert (total["completeness"], total["factuality"], total["effectiveness"]) == pytest.approx(
        (0.5 * read, 1.0 * read, 0.75 * read), abs=1e-12)
    judged = next(r for r in report["judged_rows"] if r["source"] == "all")
    assert (judged["completeness"], judged["factuality"], judged["effectiveness"], judged["radrscore"]) == (
        0.5, 1.0, 0.75, 0.75)
    assert judged["items"] == reasoned and judged["radrscore_n"] == reasoned - 1
    for key, unreadable in (("signature", "worst"), ("judged_signature", "left-out")):
        assert report[key].startswith(f"radrscore:4|backend:judge:{fake_openai.model}:t=0:max_tokens=4096|")
        assert f"|unreadable:{unreadable}|quoted:yes|boot:1000:seed=0|" in report[key] and report[key] in out

    # submitted, held to the security rules, aggregated, and on the board's reasoning view
    result = tmp_path / "out" / "radrbench-cxr.accuracy.json"
    assert check_radrbench(result.read_bytes())["radrscore"]["rows"] == report["rows"]
    tampered = json.loads(result.read_text())
    tampered["radrscore"]["judged_rows"][-1]["radrscore_high"] = 0.5
    with pytest.raises(InputError, match=r"radrscore.judged_rows\[\d+\]: radrscore 0.75 is outside its CI"):
        check_radrbench(json.dumps(tampered).encode())
    folder = tmp_path / "repo" / "submissions" / "lab-x"
    (folder / "radrbench").mkdir(parents=True)
    (folder / "radrbench" / result.name).write_bytes(result.read_bytes())
    (folder / "submission.json").write_text(json.dumps({"name": "Judged", "institution": "Lab X"}))
    aggregate(tmp_path / "repo")
    table = pd.read_parquet(tmp_path / "repo" / "radrbench.parquet")
    overall = table[table["task"] == "all"].iloc[0]
    assert (overall["radrscore"], overall["completeness"], overall["radrscore_items"]) == (
        total["radrscore"], total["completeness"], reasoned - 1)
    assert overall["radrscore_signature"] == report["signature"]  # the board's figures, never the judged items'
    shown = radrbench_table(table, "radrscore")
    assert shown["Model"].tolist() == ["Judged"] and shown["Judged items"].tolist() == [str(reasoned - 1)]
    assert shown["RadRScore"][0].startswith(f"{total['radrscore']:.3f}") and total["radrscore"] < 0.75


def test_an_outputs_file_of_another_shape_is_refused_by_name(radrbench_built, tmp_path):
    from rexrank.radrbench.outputs import load_outputs

    items = load_items(radrbench_built[0])
    as_object = tmp_path / "outputs.json"
    as_object.write_text('{"[mimic-cxr] [1]MIMIC-CXR": "<answer>A</answer>"}')
    with pytest.raises(Exception, match=r"outputs.json: expected a JSON list of"):
        load_outputs(as_object, items)
    no_config = tmp_path / "outputs.jsonl"
    no_config.write_text(json.dumps({"item_id": "x", "output": "<answer>A</answer>"}) + "\n")
    with pytest.raises(Exception, match=r"line 1: expected an object with config, item_id and output"):
        load_outputs(no_config, items)


@pytest.mark.slow
def test_the_free_text_task_gets_ratescore_beside_exact_match(radrbench_built, tmp_path, capsys, local_models):
    """As ChestX-Reasoner scores it: RaTEScore of the answer against the reference answer, per source and over all;
    checked by the submission rules and carried to the board."""
    from rexrank.hf_metric import compute
    from rexrank.radrbench.answers import answer_text

    folder = radrbench_built[0]
    items = load_items(folder)
    free = items[items["task"] == "multi_no_option"]
    assert len(free) >= 1
    answers = {(c, i): f"<answer>{a}</answer>" for c, i, a in zip(items["config"], items["item_id"], items["answer"])}
    first = (free["config"].iloc[0], free["item_id"].iloc[0])
    answers[first] = "<answer>Small left effusion and mild edema</answer>"  # not the reference: lower RaTEScore
    capsys.readouterr()
    assert main(["score-radrbench", "--predictions", str(outputs(tmp_path / "model.jsonl", answers)),
                 "--dataset", str(folder), "--out", str(tmp_path / "out")]) == 0
    assert "free-text task (multi_no_option), RaTEScore" in capsys.readouterr().out
    data = (tmp_path / "out" / "radrbench-cxr.accuracy.json").read_bytes()
    report = check_radrbench(data)  # the submission rules accept what score-radrbench writes
    rows = {r["source"]: r for r in report["ratescore"]["rows"]}
    gold = [answer_text(a)[0] or a if "<answer>" in a.lower() else a for a in free["answer"]]
    given = [answer_text(answers[(c, i)])[0] for c, i in zip(free["config"], free["item_id"])]
    expected = compute("ratescore", given, gold)["ratescore"]
    assert rows["all"]["items"] == len(free) and rows["all"]["ratescore"] == pytest.approx(expected, abs=1e-12)
    assert report["ratescore"]["signature"].startswith("ratescore:") and rows["all"]["ratescore"] < 1.0

    hostile = json.loads(data)
    hostile["ratescore"]["rows"][0]["task"] = "binary"
    with pytest.raises(InputError, match="RaTEScore is for the free-text task only"):
        check_radrbench(json.dumps(hostile).encode())
    hostile["ratescore"]["rows"][0] |= {"task": "multi_no_option", "ratescore": 9.0}
    with pytest.raises(InputError, match="is outside its CI"):
        check_radrbench(json.dumps(hostile).encode())

    repo = tmp_path / "repo"
    (repo / "submissions" / "lab-m" / "radrbench").mkdir(parents=True)
    (repo / "submissions" / "lab-m" / "radrbench" / "radrbench-cxr.accuracy.json").write_bytes(data)
    aggregate(repo)
    board = pd.read_parquet(repo / "radrbench.parquet")
    cell = board[(board["source"] == "all") & (board["task"] == "multi_no_option")]
    assert cell["ratescore"].iloc[0] == pytest.approx(rows["all"]["ratescore"])
    shown = radrbench_table(board)
    assert shown["Free text (RaTEScore)"].iloc[0].startswith(f"{rows['all']['ratescore']:.3f}")
