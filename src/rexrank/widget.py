"""The small Gradio app every metric Space runs: paste reports, get per-pair scores, the mean and the signature."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rexrank.scorers import COMPOSITES, compute


def metric_widget(name: str, key: str, title: str, card: Path, example: tuple[str, str],
                  judged: Callable[[list[str], list[str]], dict] | None = None):
    """`judged`: the compute function of an LLM-judged metric (its judge from the Space's secrets)."""
    import gradio as gr

    def score(predictions: str, references: str) -> dict:
        """One report per line in each box."""
        preds, refs = predictions.splitlines(), references.splitlines()
        if len(preds) != len(refs):
            raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
        if judged is not None:
            return judged(preds, refs)
        if name in COMPOSITES:
            from rexrank.scorecard import composite_report

            return composite_report(name, preds, refs)
        return compute(name, preds, refs, key=key)

    return gr.Interface(
        fn=score,
        inputs=[gr.Textbox(label="Predictions (one report per line)", lines=6, value=example[0]),
                gr.Textbox(label="References (one report per line)", lines=6, value=example[1])],
        outputs=gr.JSON(label=title),
        title=title,
        article=card.read_text(encoding="utf-8").split("---", 2)[2],
    )
