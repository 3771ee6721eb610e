"""The README's "Score your model" shows the input formats, and what it shows reads: its split-JSON example is a
ReXrank split, its one-line predictions in JSON, JSONL and CSV are predictions, and the demo's split shipped as a
ReXrank split file (`rexrank.demo.SPLIT_TEMPLATE`) is the demo's split, scored alike and packaged."""

import fnmatch
import json
import re
import tomllib

from conftest import ROOT

from rexrank import demo
from rexrank.cli import main
from rexrank.data import load_predictions, load_split
from rexrank.demo.build import write_split_template
from rexrank.results import Result

SECTION = (ROOT / "README.md").read_text().split("## Score your model")[1].split("\n## ")[0]


def blocks(language: str) -> list[str]:
    return [re.sub(r"^  ", "", b, flags=re.M) for b in re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)]


def test_the_split_json_example_is_a_rexrank_split(tmp_path):
    [example] = blocks("json")
    assert len(example.splitlines()) <= 10
    path = tmp_path / "my_split.json"
    path.write_text(example)
    split = load_split(path)
    assert split.studies["study_id"].tolist() == ["demo-0001", "demo-0046"]
    findings = split.references("findings")
    assert list(findings.references) == ["demo-0001"] and list(findings.dropped) == ["demo-0046"]  # null: left out


def test_each_predictions_line_is_a_predictions_file_of_its_format(tmp_path):
    formats, _ = blocks("text")
    texts: dict[str, str] = {}
    name = ""
    for line in formats.splitlines():  # a file's name, then its text; an indented line goes on with the last file
        if line.startswith(" "):
            texts[name] += "\n" + line.strip()
        else:
            name, text = line.split(None, 1)
            texts[name] = text
    assert set(texts) == {"predictions.json", "predictions.jsonl", "predictions.csv"}
    assert all(len(text.splitlines()) == 1 for name, text in texts.items() if name != "predictions.csv")
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        assert load_predictions(tmp_path / name) == {"demo-0001": "Mild cardiomegaly. The lungs are clear."}, name


def test_the_split_template_is_the_demo_split_scored_alike_and_packaged(tmp_path):
    rows = [json.loads(line) for line in demo.DATASET.read_text().splitlines()]
    write_split_template(tmp_path / "split.json", rows)
    assert (tmp_path / "split.json").read_bytes() == demo.SPLIT_TEMPLATE.read_bytes()  # what the build writes
    template, jsonl = load_split(demo.SPLIT_TEMPLATE), load_split(demo.DATASET)
    assert template.studies[["study_id", "findings", "impression"]].equals(jsonl.studies[["study_id", "findings",
                                                                                           "impression"]])
    for source, out in ((demo.SPLIT_TEMPLATE, tmp_path / "a"), (demo.DATASET, tmp_path / "b")):
        assert main(["score", "--predictions", str(demo.predictions("demo-careful", "findings_impression")),
                     "--dataset", str(source), "--task", "findings_impression", "--metrics", "bleu2", "--out",
                     str(out), "--quiet"]) == 0
    [a], [b] = (list(p.glob("*.json")) for p in (tmp_path / "a", tmp_path / "b"))
    assert Result.read(a).metrics["bleu2"] == Result.read(b).metrics["bleu2"] and not Result.read(a).warnings
    packaged = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rexrank"]
    assert any(fnmatch.fnmatch("demo/split.json", pattern) for pattern in packaged)


def test_the_findings_impression_example_is_written_as_its_reference_is(tmp_path):
    """A findings+impression prediction shown as the task's reference is made: scored with no word of the other task,
    and a findings-only text in its place is warned about."""
    from rexrank.data import align

    _, example = blocks("text")
    name, text = example.strip().split(None, 1)
    (tmp_path / name).write_text(text)
    predictions = load_predictions(tmp_path / name)
    assert re.fullmatch(r"Findings: .+ Impression: .+", predictions["demo-0001"])
    (tmp_path / "split.json").write_text(blocks("json")[0])
    references = load_split(tmp_path / "split.json").references("findings_impression")
    assert not [w for w in align(references, predictions, partial=True).warnings if "Impression:" in w]
    findings_only = {"demo-0001": predictions["demo-0001"].split(" Impression:")[0].removeprefix("Findings: ")}
    assert [w for w in align(references, findings_only, partial=True).warnings if "are these for --task findings" in w]
