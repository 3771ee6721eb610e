"""The small Gradio app every metric Space runs (its app.py, written by `rexrank.spaces`, is one call to this): paste
the inputs, get what the metric's `evaluate` module computes (per-pair scores, the value, the signature)."""

from __future__ import annotations

from pathlib import Path

from rexrank.hf_metric import compute, example_of
from rexrank.scorers import canonical, spec


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _pairs(name: str):
    """A report metric: one report per line in each box."""
    import gradio as gr

    predictions, references, _ = example_of(name)

    def score(predictions: str, references: str) -> dict:
        preds, refs = predictions.splitlines(), references.splitlines()
        if len(preds) != len(refs):
            raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
        return compute(name, preds, refs)

    return score, [gr.Textbox(label="Predictions (one report per line)", lines=6, value="\n".join(predictions)),
                   gr.Textbox(label="References (one report per line)", lines=6, value="\n".join(references))]


def _radrscore(name: str):
    """One item: the model's output, its reference reasoning steps (one per line) and its report. Pasted text is sent
    to the Space's judge: do not paste credentialed reports (MIMIC-CXR, CheXpert)."""
    import gradio as gr

    predictions, references, extra = example_of(name)

    def score(prediction: str, reasoning: str, report: str) -> dict:
        return compute(name, [prediction], [_lines(reasoning)], reports=[report], dataset=None)  # pasted, no set

    return score, [gr.Textbox(label="Model output (<think>...</think><answer>...</answer>)", lines=6,
                              value=predictions[0]),
                   gr.Textbox(label="Reference reasoning steps (one per line)", lines=6,
                              value="\n".join(references[0])),
                   gr.Textbox(label="Report", lines=4, value=extra["reports"][0])]


def _question(name: str):
    """One question: the model's answer, the options one per line (`A. ...`) and the correct letter."""
    import gradio as gr

    predictions, references, extra = example_of(name)

    def score(prediction: str, options: str, correct: str) -> dict:
        return compute(name, [prediction], [correct.strip()], options=[_lines(options)])

    return score, [gr.Textbox(label="Model answer", lines=3, value=predictions[0]),
                   gr.Textbox(label="Options (one per line)", lines=4, value="\n".join(extra["options"][0])),
                   gr.Textbox(label="Correct letter", value=references[0])]


LAYOUTS = {"radrscore": _radrscore, "rexvqa_accuracy": _question}  # the metrics scored on more than report pairs


def metric_widget(name: str, card: Path):
    """The Space of metric `name`. A judged metric's judge comes from the Space's secrets (REXRANK_JUDGE_URL,
    REXRANK_JUDGE_MODEL, OPENAI_API_KEY)."""
    import gradio as gr

    name = canonical(name)
    score, inputs = LAYOUTS.get(name, _pairs)(name)
    title = f"{spec(name).title} (rexrank)"
    return gr.Interface(fn=score, inputs=inputs, outputs=gr.JSON(label=title), title=title,
                        article=card.read_text(encoding="utf-8").split("---", 2)[2])
