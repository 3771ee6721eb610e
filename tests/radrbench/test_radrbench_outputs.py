"""`rexrank score-radrbench` on each input shape: ChestX-Reasoner's own output files (joined to the test set by
question, item_id and image), rexrank's layout with a whole benchmark and --config, one-element lists; every refusal
names the record's place and the item. Synthetic items (tests/fixtures/radrbench.py) in the authors' layout."""

import json

import pandas as pd
import pytest
from fixtures.chestx_reasoner import echoed, record
from fixtures.radrbench import BINARY, RSNA, TEMPORAL

from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.radrbench.outputs import load_outputs
from rexrank.radrbench.score import load_items

ID = {item["question"]: item["item_id"] for item in BINARY}


def write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records))
    return path


def score(capsys, *args):
    capsys.readouterr()
    code = main(["score-radrbench", *map(str, args)])
    return code, *capsys.readouterr()


def test_the_authors_file_scores_as_it_is_by_either_reading(radrbench_built, tmp_path, capsys):
    """A Qwen2-VL-7B file (its folder named as the authors named it), records in another order than the test set's,
    questions with the instruction appended, outputs after the echoed chat prompt."""
    folder = radrbench_built[0]
    effusion, cardiomegaly, pneumothorax = (item["question"] for item in BINARY)  # references A, B, B
    path = write(tmp_path / "qwenvl7b" / "mimic_binary_test_option.json", [
        record(pneumothorax, "B", echoed(pneumothorax, "<think>x</think><answer>\nA\n</answer>")),  # wrong
        record(effusion, "A", echoed(effusion, "<think>x</think><answer>A) Yes</answer>")),  # right
        record(cardiomegaly, "B", echoed(cardiomegaly, "The heart is normal. Answer: B) No"))])  # no tag
    by_rule = {}
    for rule in ("rexrank", "chestx-reasoner"):
        code, out, err = score(capsys, "--predictions", path, "--dataset", folder, "--config", "mimic_binary",
                               "--answer-rule", rule, "--out", tmp_path / rule, "--resamples", 50)
        assert code == 0, err
        report = json.loads((tmp_path / rule / "radrbench-cxr.accuracy.json").read_text())
        per_item = pd.read_parquet(tmp_path / rule / "radrbench-cxr.per_item.parquet").set_index("item_id")
        by_rule[rule] = (report, per_item, out)
    report, per_item, out = by_rule["rexrank"]
    assert report["model"] == "qwenvl7b" and report["rows"][-1] | {"low": 0, "high": 0, "failures": 0} == {
        "source": "all", "task": "all", "items": 3, "scored": 3, "correct": 1, "accuracy": 1 / 3, "low": 0, "high": 0,
        "failures": 0}
    assert per_item["correct"].to_dict() == {ID[effusion]: True, ID[cardiomegaly]: False, ID[pneumothorax]: False}
    # the authors' qwenvl branch: "B" occurs in the untagged "Answer: B) No"
    report, per_item, out = by_rule["chestx-reasoner"]
    assert "for model 'qwenvl7b': its qwenvl branch" in out
    assert per_item["correct"].to_dict() == {ID[effusion]: True, ID[cardiomegaly]: True, ID[pneumothorax]: False}
    assert report["rows"][-1]["accuracy"] == 2 / 3
    assert report["signature"].startswith("radrbench-accuracy:1|parser:chestx-reasoner:qwenvl@9a8a00d|"
                                          "unreadable:left-out|overall:option-tasks|boot:50:seed=0|")


def test_a_record_its_question_does_not_single_out_is_refused_saying_what_to_add(radrbench_built, tmp_path, capsys):
    folder = radrbench_built[0]
    items = load_items(folder)
    question = RSNA[0]["question"]  # both RSNA items ask it
    bare = [record(question, item["answer"], "<answer>A</answer>") for item in RSNA]
    code, _, err = score(capsys, "--predictions", write(tmp_path / "rsna_binary_test_option.json", bare),
                         "--dataset", folder)
    assert code == 2 and "2 problem(s), nothing was scored" in err
    assert (f"record 1 (question {question.replace(chr(10), ' ')!r}): 2 test items of rsna.binary have this "
            f"question ({RSNA[0]['item_id']}, {RSNA[1]['item_id']}): add the item's image_path or item_id") in err
    # the published image path, or the item id, tells them apart (the image: by its tail, the test set's is relative)
    with_image = [dict(r, image_path=item["image_path"]) for r, item in zip(bare, RSNA)][::-1]
    outputs = load_outputs(write(tmp_path / "rsna_binary_test_option.json", with_image), items)
    assert outputs.where == {("rsna.binary", RSNA[1]["item_id"]): "record 1", ("rsna.binary", RSNA[0]["item_id"]):
                             "record 2"} and outputs.layout == "chestx-reasoner"
    with_id = [dict(r, item_id=item["item_id"]) for r, item in zip(bare, RSNA)]
    assert set(load_outputs(write(tmp_path / "rsna_binary_test_option.json", with_id), items)) == set(outputs)
    # an image the test set does not have: no item, said so
    lost = [dict(bare[0], image_path="/elsewhere/RSNA/train/other.jpeg")]
    with pytest.raises(InputError, match="no test item of rsna.binary has this question and image_path"):
        load_outputs(write(tmp_path / "rsna_binary_test_option.json", lost), items)


def test_repeated_published_ids_are_told_apart_by_their_question(radrbench_built, tmp_path):
    """MS-CXR-T's published ids repeat for several questions on one image pair: item_id and question single out one."""
    items = load_items(radrbench_built[0])
    records = [record(item["question"], item["answer"], f"<answer>{item['answer']}</answer>",
                      item_id=item["item_id"], image_path=item["image_path"]) for item in TEMPORAL]
    outputs = load_outputs(write(tmp_path / "temporal_cls_test_option.json", records), items)
    assert sorted(item for _, item in outputs) == ["[ms-cxr-t-train] [pair-7]MS-CXR-T",
                                                   "[ms-cxr-t-train] [pair-7]MS-CXR-T#2",
                                                   "[ms-cxr-t-train] [pair-8]MS-CXR-T"]


def test_one_element_lists_are_read_as_their_text_and_every_problem_names_record_and_item(radrbench_built, tmp_path):
    items = load_items(radrbench_built[0])
    effusion, cardiomegaly, pneumothorax = (item["question"] for item in BINARY)
    path = write(tmp_path / "qwenvl72b" / "mimic_binary_test_option.json",
                 [record(effusion, "A", ["<answer>A</answer>"])])
    assert load_outputs(path, items) == {("mimic-cxr.binary", ID[effusion]): "<answer>A</answer>"}
    bad = [record(effusion, "A", ["<answer>A</answer>", "again"]), record(cardiomegaly, "A", "<answer>B</answer>"),
           record(pneumothorax, "B", "x"), record(pneumothorax, "B", "y")]
    with pytest.raises(InputError) as err:
        load_outputs(write(path, bad), items)
    assert str(err.value).splitlines()[1:] == [
        f"  - record 1 (item mimic-cxr.binary/{ID[effusion]}): the output is list of 2 ['<answer>A</answer>', 'again'],"
        " not text (nor a list of one text)",
        f"  - record 2 (item mimic-cxr.binary/{ID[cardiomegaly]}): its answer '<answer> A </answer>' is not the test "
        "item's 'B'",
        f"  - record 4 (item mimic-cxr.binary/{ID[pneumothorax]}): the same test item as record 3"]


def test_the_task_of_a_file_comes_from_its_name_or_one_config(radrbench_built, tmp_path):
    items = load_items(radrbench_built[0])
    path = write(tmp_path / "predictions.json", [record(BINARY[0]["question"], "A", "<answer>A</answer>")])
    with pytest.raises(InputError, match="predictions.json: cannot tell its task from its name: give --config"):
        load_outputs(path, items)
    assert len(load_outputs(path, items, ["mimic_binary"])) == 1
    with pytest.raises(InputError, match="holds one task; give one --config"):
        load_outputs(path, items, ["mimic_binary", "rsna_binary"])
    named = write(tmp_path / "mimic_single_test_option.json", json.loads(path.read_text()))
    with pytest.raises(InputError, match="its name says mimic-cxr.single, --config says mimic-cxr.binary"):
        load_outputs(named, items, ["mimic-cxr.binary"])


@pytest.mark.slow
def test_a_whole_benchmark_file_with_config_scores_that_config_and_says_what_it_set_aside(radrbench_built, tmp_path,
                                                                                         capsys):
    folder = radrbench_built[0]
    items = load_items(folder)
    lines = [{"config": c.replace("mimic-cxr.", "mimic_"), "item_id": i, "output": f"<answer>{a}</answer>"}
             for c, i, a in zip(items["config"], items["item_id"], items["answer"])]  # the authors' task names too
    path = tmp_path / "all.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = score(capsys, "--predictions", path, "--dataset", folder, "--config", "mimic-cxr.binary",
                           "--out", tmp_path / "out", "--resamples", 50)
    others = items[items["config"] != "mimic-cxr.binary"]["config"].value_counts().sort_index()
    assert code == 0 and (f"--config mimic-cxr.binary: {others.sum()} output(s) of other configs set aside ("
                          + ", ".join(f"{c} {n}" for c, n in others.items()) + ")") in err
    report = json.loads((tmp_path / "out" / "radrbench-cxr.accuracy.json").read_text())
    assert report["rows"][-1]["items"] == len(BINARY) == report["rows"][-1]["correct"]
    assert "RaTEScore" not in err  # no free-text item among those scored: nothing to warn of
    lines[0]["output"] = ["<answer>A</answer>", "two"]
    bad = tmp_path / "all.json"
    bad.write_text(json.dumps(lines))
    code, _, err = score(capsys, "--predictions", bad, "--dataset", folder)
    assert code == 2 and f"record 1 (item {items['config'][0]}/{items['item_id'][0]}): the output is list of 2" in err


@pytest.mark.slow
def test_the_authors_stored_replies_replayed_through_a_loopback_judge_give_both_figures(radrbench_built, tmp_path,
                                                                                       capsys, fake_openai,
                                                                                       monkeypatch):
    """Five reasoned items, each judge reply the one stored for its prompt: two items' replies cannot all be read
    (an extraction under `key_conclusions`, and the placeholder the reference stores after two unreadable replies).
    The board counts them 0; the judged items' figures leave them out, as the authors' figures do."""
    from fixtures.chestx_reasoner import findings, replies_by_prompt, stored
    from fixtures.radrbench import BINARY_REASONING, CHEXPERT_REASONING, SINGLE_REASONING, TEMPORAL_REASONING

    folder = radrbench_built[0]
    items = load_items(folder)
    reasoned = {"mimic-cxr.binary": BINARY_REASONING, "mimic-cxr.single": SINGLE_REASONING,
                "chexpert.single": CHEXPERT_REASONING, "ms-cxr-t.temporal": TEMPORAL_REASONING}
    placeholder = {"reason_steps": "not JSON twice", "refined_steps": [], "final_conclusion": ""}
    # (observations in the reference, in the output, recalled, correct, efficiency, gt's key): Rc, Rf, Re
    plans = [(2, 4, 1, 3, {"effective_count": 2, "ineffective_count": 2}, "key_conclusion"),  # .5 .75 .5
             (1, 2, 1, 2, {"effective_count": 3, "ineffective_count": 1}, "key_conclusion"),  # 1 1 .75
             (3, 2, 1, 1, {"effective_count": 1, "ineffective_count": 1}, "key_conclusions"),  # not read
             (2, 1, 2, 1, placeholder, "key_conclusion"),  # not read
             (4, 2, 2, 1, {"effective_count": 1, "ineffective_count": 1}, "key_conclusion")]  # .5 .5 .5
    answers, replayed = {}, []
    for plan, (config, item) in zip(plans, [(c, i) for c, group in reasoned.items() for i in group]):
        gt, predicted, recalled, correct, efficiency, key = plan
        row = items[(items["config"] == config) & (items["question"] == item["question"])].iloc[0]
        pred = f"<think>Synthetic reasoning {len(answers)}.</think><answer>{row['answer']}</answer>"
        answers[(config, row["item_id"])] = pred
        replayed.append(stored(item["reason_steps"], pred, item["original_report"],
                               findings(*(f"finding {n}" for n in range(gt)), key=key),
                               findings(*(f"seen {len(replayed)}.{n}" for n in range(predicted))), recalled, correct,
                               efficiency))  # one report for all: each item's observations its own, or prompts repeat
    for config, item_id in zip(items["config"], items["item_id"]):
        answers.setdefault((config, item_id), "<answer>A</answer>")
    fake_openai.replies, fake_openai.default_reply = replies_by_prompt(replayed), "UNSCRIPTED PROMPT"
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    path = tmp_path / "model.jsonl"
    path.write_text("".join(json.dumps({"config": c, "item_id": i, "output": o}) + "\n"
                            for (c, i), o in answers.items()))
    code, out, err = score(capsys, "--predictions", path, "--dataset", folder, "--out", tmp_path / "out",
                           "--judge-url", fake_openai.url, "--judge-model", fake_openai.model, "--resamples", 50)
    assert code == 0, err
    assert set(fake_openai.prompts()) <= set(fake_openai.replies)  # every prompt was one the authors' replies answer
    block = json.loads((tmp_path / "out" / "radrbench-cxr.accuracy.json").read_text())["radrscore"]
    assert (block["judged"], block["unparseable"]) == (3, 2)
    board = next(r for r in block["rows"] if r["source"] == "all")
    judged = next(r for r in block["judged_rows"] if r["source"] == "all")
    read = [(0.5, 0.75, 0.5), (1.0, 1.0, 0.75), (0.5, 0.5, 0.5)]  # Rc, Rf, Re of the items read, from the plans
    for n, part in enumerate(("completeness", "factuality", "effectiveness")):
        assert judged[part] == pytest.approx(sum(r[n] for r in read) / 3, abs=1e-12)
        assert board[part] == pytest.approx(sum(r[n] for r in read) / 5, abs=1e-12)
    assert judged["radrscore"] == pytest.approx(sum(map(sum, read)) / 9, abs=1e-12)
    assert (board["items"], board["radrscore_n"], judged["items"], judged["radrscore_n"]) == (5, 3, 5, 3)
    # a group none of whose items was read has the board's row (at 0) and no judged row
    assert ("mimic-cxr", "single") in {(r["source"], r["task"]) for r in block["rows"]}
    assert ("mimic-cxr", "single") not in {(r["source"], r["task"]) for r in block["judged_rows"]}
    assert "|unreadable:worst|" in block["signature"] and "|unreadable:left-out|" in block["judged_signature"]
