"""The RadRBench-CXR part of the embedded demo: synthetic items in the published layout and two synthetic
reasoning "models" (`python -m rexrank.demo.radrbench` writes them beside this file).

Every question here was written for this project; none comes from RadRBench-CXR, MIMIC-CXR or any real report.
The items sit in `radrbench/` as the published files do (`<source>_<task>_test_option.json`), so the demo builds
them with the same builder as the real dataset. The two models' outputs (`radrbench/outputs/<model>.jsonl`) go
through every answer form the parser reads (docs/metrics.md §9): letters, `A) text`, an option's text, `Yes, ...`,
multi-choice letters in another order with spaces, and the failures: no `<answer>`, an unclosed tag, an empty
output, a letter that is no option, two options where one is asked.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

HERE = Path(__file__).parent / "radrbench"
OUTPUTS = HERE / "outputs"
YES_NO = "\nOptions:\nA) Yes\nB) No"
TREND = "\nOptions:\nA) stable\nB) worsening\nC) improving"
FOUR = "\nOptions:\nA) {}\nB) {}\nC) {}\nD) {}"
# name -> model card fields, as demo/systems.json
MODELS = {"demo-reasoner": {"name": "Demo-Reasoner", "institution": "rexrank demo", "url": "https://example.org/reasoner",
                            "trained_on": ["synthetic"]},
          "demo-guesser": {"name": "Demo-Guesser", "institution": "rexrank demo", "url": "https://example.org/guesser",
                           "trained_on": ["synthetic"]}}


def _item(source: str, n: int, question: str, answer: str, content: str, images: int = 1) -> dict:
    return {"item_id": f"[{source}] [demo-{n:02d}]", "question": question, "answer": answer, "answer_content": content,
            "image_path": [f"/demo/{source}/demo-{n:02d}/view{v}.jpg" for v in range(1, images + 1)],
            "dataset_name": "rexrank synthetic demo"}


def _binary(source: str, rows: list[tuple[str, str]]) -> list[dict]:
    return [_item(source, n, f"Is there {finding} on this synthetic chest X-ray?" + YES_NO, answer,
                  "Yes" if answer == "A" else "No") for n, (finding, answer) in enumerate(rows, 1)]


def _single(source: str, rows: list[tuple[list[str], str]]) -> list[dict]:
    return [_item(source, n, "Which one finding does this synthetic chest X-ray show?" + FOUR.format(*options), answer,
                  options["ABCD".index(answer)]) for n, (options, answer) in enumerate(rows, 1)]


def _multi(source: str, rows: list[tuple[list[str], str]]) -> list[dict]:
    return [_item(source, n, "Which findings does this synthetic chest X-ray show? Choose all that apply."
                  + FOUR.format(*options), answer,
                  ", ".join(options["ABCD".index(a)] for a in answer.split(", "))) for n, (options, answer)
            in enumerate(rows, 1)]


FINDINGS = ["edema", "pleural effusion", "cardiomegaly", "atelectasis", "pneumothorax", "fracture", "consolidation",
            "support devices"]
# file name -> items
FILES = {
    "mimic_binary_test_option.json": _binary("mimic-cxr", [("a pleural effusion", "A"), ("cardiomegaly", "B"),
                                                           ("a pneumothorax", "B"), ("edema", "A")]),
    "rsna_binary_test_option.json": _binary("rsna", [("pneumonia", "A"), ("pneumonia", "B"), ("pneumonia", "B")]),
    "mimic_single_test_option.json": _single("mimic-cxr", [(FINDINGS[:4], "B"), (FINDINGS[2:6], "D"),
                                                           (FINDINGS[4:8], "A")]),
    "chexpert_single_test_option.json": _single("chexpert", [(FINDINGS[1:5], "C"), (FINDINGS[3:7], "A"),
                                                             (FINDINGS[:4], "D")]),
    "mimic_multi_test_option.json": _multi("mimic-cxr", [(FINDINGS[:4], "A, C"), (FINDINGS[2:6], "B, D"),
                                                         (FINDINGS[4:8], "A, B, D")]),
    "chexpert_multi_test_option.json": _multi("chexpert", [(FINDINGS[1:5], "A, B"), (FINDINGS[3:7], "C, D")]),
    "mimic_multi_test_no_option.json": [
        _item("mimic-cxr", n, "List the findings this synthetic chest X-ray shows.", answer, answer)
        for n, answer in enumerate(["edema, cardiomegaly", "pleural effusion", "atelectasis, fracture"], 11)],
    "temporal_cls_test_option.json": [
        _item("ms-cxr-t", n, f"How has the {finding} changed between the two synthetic chest X-rays?" + TREND, answer,
              {"A": "stable", "B": "worsening", "C": "improving"}[answer], images=2)
        for n, (finding, answer) in enumerate([("pleural effusion", "A"), ("edema", "C"), ("consolidation", "B"),
                                               ("pneumothorax", "A")], 1)],
}


def _think(answer: str | None, thought: str = "I compare the synthetic image with the question.") -> str:
    return f"<think>{thought}</think>" + ("" if answer is None else f"<answer>{answer}</answer>")


# model -> (file, item number) -> raw output; items not listed are answered with the reference letter(s) (reasoner)
# or "A" (guesser).
SPECIAL = {
    "demo-reasoner": {
        ("mimic_binary_test_option.json", 1): _think("A) Yes"),
        ("mimic_binary_test_option.json", 2): _think("No, the heart is not enlarged."),
        ("mimic_binary_test_option.json", 3): _think("no"),
        ("rsna_binary_test_option.json", 1): _think("Yes, there is an opacity."),
        ("mimic_single_test_option.json", 1): _think("pleural effusion"),
        ("mimic_single_test_option.json", 2): _think("(D)"),
        ("chexpert_single_test_option.json", 2): _think("Option A: atelectasis"),
        ("mimic_multi_test_option.json", 1): _think(" C ,  A "),
        ("mimic_multi_test_option.json", 3): _think("D and B and A"),
        ("chexpert_multi_test_option.json", 2): _think("D C"),
        ("mimic_multi_test_no_option.json", 1): _think("Cardiomegaly and edema."),
        ("mimic_multi_test_no_option.json", 2): _think("pleural effusion, edema"),  # one finding too many: wrong
        ("temporal_cls_test_option.json", 2): _think("Improving."),
        ("temporal_cls_test_option.json", 3): "<think>It got worse.</think><answer>B",  # cut: unclosed tag
        ("temporal_cls_test_option.json", 4): "<THINK>No change.</THINK><ANSWER>stable</ANSWER>",
    },
    "demo-guesser": {
        ("mimic_binary_test_option.json", 2): "Yes.",  # no <answer> tag
        ("rsna_binary_test_option.json", 3): "",  # empty output
        ("mimic_single_test_option.json", 1): _think("E"),  # not an option
        ("chexpert_single_test_option.json", 1): _think("A, C"),  # two options where one is asked: ambiguous
        ("mimic_multi_test_option.json", 1): _think("A"),
        ("mimic_multi_test_option.json", 2): _think("D ,B"),
        ("mimic_multi_test_no_option.json", 1): _think("edema"),
        ("mimic_multi_test_no_option.json", 2): _think("Pleural effusion"),
        ("mimic_multi_test_no_option.json", 3): _think(""),  # empty answer
        ("temporal_cls_test_option.json", 3): _think("unchanged"),  # a synonym is not an option
        ("temporal_cls_test_option.json", 4): "<think>Looks the same.</think>",  # no answer tag
    },
}


def outputs(model: str) -> list[dict]:
    """The model's output records ({config, item_id, output}) for score-radrbench."""
    from rexrank.radrbench.answers import task_of
    from rexrank.radrbench.dataset import SOURCES

    records = []
    for name, items in FILES.items():
        stem = name.removesuffix(".json")
        config = f"{SOURCES[stem.split('_')[0]]}.{task_of(stem)}"
        for n, item in enumerate(items, 1):
            default = _think(item["answer"] if model == "demo-reasoner" else "A")
            records.append({"config": config, "item_id": item["item_id"],
                            "output": SPECIAL[model].get((name, n), default)})
    return records


def build() -> None:
    """Writes the published-layout files and the two models' outputs beside this module."""
    HERE.mkdir(exist_ok=True)
    OUTPUTS.mkdir(exist_ok=True)
    for name, items in FILES.items():
        (HERE / name).write_text(json.dumps(items, indent=1) + "\n", encoding="utf-8")
    (HERE / "models.json").write_text(json.dumps(MODELS, indent=2) + "\n", encoding="utf-8")
    for model in MODELS:
        (OUTPUTS / f"{model}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in outputs(model)), encoding="utf-8")


def models() -> dict[str, dict]:
    return json.loads((HERE / "models.json").read_text())


def output_file(model: str) -> Path:
    return OUTPUTS / f"{model}.jsonl"


def dataset(out: Path | None = None) -> Path:
    """The demo items built as a RadRBench-CXR dataset folder (by `rexrank build-dataset radrbench-cxr`'s code)."""
    from rexrank.radrbench.dataset import read_radrbench, write_radrbench

    out = out or Path(tempfile.mkdtemp(prefix="rexrank-radrbench-demo-")) / "radrbench-cxr"
    return write_radrbench(read_radrbench([p for p in sorted(HERE.glob("*_test_*.json"))]), out)


if __name__ == "__main__":
    build()
