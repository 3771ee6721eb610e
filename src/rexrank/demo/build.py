"""Writes the embedded demo: a synthetic split and three synthetic systems (`python -m rexrank.demo.build`).

Every sentence below was written for this project; none comes from a real report. The output is
committed beside this file so the demo never changes under a user; rerunning this reproduces it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
NORMAL = [
    "The lungs are clear without focal consolidation.",
    "No pleural effusion or pneumothorax is seen.",
    "The cardiomediastinal silhouette is within normal limits.",
    "Heart size is normal.",
    "No acute osseous abnormality is identified.",
    "The hilar contours are unremarkable.",
]
# (finding sentence, what the impression says about it)
ABNORMAL = [
    ("There is a small left pleural effusion.", "Small left pleural effusion."),
    ("Moderate right pleural effusion with adjacent atelectasis.", "Moderate right pleural effusion."),
    ("Mild cardiomegaly is present.", "Mild cardiomegaly."),
    ("Patchy opacity in the right lower lobe, concerning for pneumonia.", "Right lower lobe pneumonia."),
    ("Bibasilar atelectasis is noted.", "Bibasilar atelectasis."),
    ("Mild pulmonary vascular congestion without frank edema.", "Mild vascular congestion."),
    ("A right internal jugular catheter terminates in the mid superior vena cava.",
     "Right internal jugular catheter in standard position."),
    ("An endotracheal tube terminates 4 cm above the carina.", "Endotracheal tube in appropriate position."),
    ("Small apical left pneumothorax.", "Small left pneumothorax."),
    ("Degenerative changes of the thoracic spine.", "No acute cardiopulmonary process."),
    ("Healed fracture of a left posterior rib.", "Old left rib fracture."),
    ("Hyperinflated lungs consistent with emphysema.", "Emphysema."),
    ("Linear scarring in the left midlung.", "No acute cardiopulmonary process."),
    ("A 1.2 cm nodule projects over the right upper lobe.", "Right upper lobe nodule; CT recommended."),
]
SYSTEMS = {
    "demo-careful": {"name": "Demo-Careful", "institution": "rexrank demo", "url": "https://example.org/careful",
                     "trained_on": ["synthetic"], "access": "open-weights", "code": "https://example.org/careful/code"},
    "demo-template": {"name": "Demo-Template", "institution": "rexrank demo", "url": "https://example.org/template",
                      "trained_on": ["synthetic"], "access": "api"},
    "demo-shuffled": {"name": "Demo-Shuffled", "institution": "rexrank demo", "url": "https://example.org/shuffled",
                      "trained_on": ["synthetic"]},
}
TEMPLATE = ("The lungs are clear without focal consolidation. No pleural effusion or pneumothorax is seen. "
            "Heart size is normal.")


# A normal sentence that an abnormal finding contradicts (by a word they share).
CONTRADICTS = {"effusion": "pleural effusion", "pneumothorax": "pneumothorax", "cardiomegaly": "Heart size",
               "opacity": "lungs are clear", "atelectasis": "lungs are clear", "emphysema": "lungs are clear",
               "nodule": "lungs are clear", "scarring": "lungs are clear", "congestion": "lungs are clear",
               "fracture": "osseous"}


def consistent(normal: str, abnormal: list[tuple[str, str]]) -> bool:
    return not any(word in finding and CONTRADICTS[word] in normal
                   for finding, _ in abnormal for word in CONTRADICTS)


def study(rng: random.Random) -> tuple[list[str], list[str]]:
    """Findings sentences and impression sentences of one synthetic study."""
    abnormal = rng.sample(ABNORMAL, rng.choice([0, 0, 1, 1, 2, 3]))
    normal = [s for s in rng.sample(NORMAL, rng.randint(2, 4)) if consistent(s, abnormal)]
    findings = [s for s, _ in abnormal] + normal
    impression = list(dict.fromkeys(i for _, i in abnormal)) or ["No acute cardiopulmonary process."]
    return findings, impression


def careful(rng: random.Random, findings: list[str]) -> list[str]:
    """A decent model: keeps most sentences, sometimes invents one finding."""
    kept = [s for s in findings if rng.random() < 0.8] or findings[:1]
    if rng.random() < 0.2:
        kept.insert(0, rng.choice(ABNORMAL)[0])
    return kept


def build(n: int = 48, seed: int = 7) -> None:
    rng = random.Random(seed)
    rows = []
    for i in range(1, n + 1):
        findings, impression = study(rng)
        rows.append({"study_id": f"demo-{i:04d}", "findings": " ".join(findings), "impression": " ".join(impression)})
    for row in rows[-6:-3]:
        row["impression"] = None  # findings only, as many MIMIC-CXR studies
    for row in rows[-3:]:
        row["findings"] = None  # impression only: left out of the findings task
    shuffled = rng.sample(rows, len(rows))

    predictions: dict[str, dict[str, list[dict]]] = {key: {"findings": [], "findings_impression": []}
                                                     for key in SYSTEMS}
    for row, other in zip(rows, shuffled):
        truth = (row["findings"] or "").split(". ")
        truth = [s if s.endswith(".") else s + "." for s in truth if s]
        careful_findings = " ".join(careful(rng, truth)) if truth else ""
        outputs = {
            "demo-careful": (careful_findings, row["impression"] or "No acute cardiopulmonary process."),
            "demo-template": (TEMPLATE, "No acute cardiopulmonary process."),
            "demo-shuffled": (other["findings"] or TEMPLATE, other["impression"] or "No acute process."),
        }
        for key, (f, imp) in outputs.items():
            predictions[key]["findings"].append({"study_id": row["study_id"], "prediction": f})
            predictions[key]["findings_impression"].append(
                {"study_id": row["study_id"], "prediction": f"Findings: {f} Impression: {imp}"})
    predictions["demo-template"]["findings"][5]["prediction"] = ""  # shows how an empty report is handled

    write_jsonl(HERE / "dataset.jsonl", rows)
    write_split_template(HERE / "split.json", rows)
    (HERE / "systems.json").write_text(json.dumps(SYSTEMS, indent=2) + "\n")
    for key, tasks in predictions.items():
        for task, records in tasks.items():
            write_jsonl(HERE / "predictions" / f"{key}.{task}.jsonl", records)


def write_split_template(path: Path, rows: list[dict]) -> None:
    """The demo's split in ReXrank's split format (`{study_id: {section_findings, section_impression, image_path}}`,
    a missing section null), a template for a split of one's own: `rexrank score --dataset split.json` reads it as
    it reads `dataset.jsonl`. The demo has no images: its image paths are placeholders."""
    split = {row["study_id"]: {"section_findings": row["findings"], "section_impression": row["impression"],
                               "image_path": [f"{row['study_id']}/frontal.png", f"{row['study_id']}/lateral.png"]}
             for row in rows}
    path.write_text(json.dumps(split, indent=2) + "\n", encoding="utf-8")


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


if __name__ == "__main__":
    build()
