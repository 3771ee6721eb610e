"""The small Gradio app every metric Space runs: paste reports, get per-pair scores, the mean and the signature."""

from __future__ import annotations

from pathlib import Path

from rexrank.hf_metric import compute


def metric_widget(name: str, title: str, card: Path, example: tuple[str, str]):
    """The Space of metric `name`: what its `evaluate` module returns for the pasted pairs. A judged metric's judge
    comes from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL, OPENAI_API_KEY)."""
    import gradio as gr

    def score(predictions: str, references: str) -> dict:
        """One report per line in each box."""
        preds, refs = predictions.splitlines(), references.splitlines()
        if len(preds) != len(refs):
            raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
        return compute(name, preds, refs)

    return gr.Interface(
        fn=score,
        inputs=[gr.Textbox(label="Predictions (one report per line)", lines=6, value=example[0]),
                gr.Textbox(label="References (one report per line)", lines=6, value=example[1])],
        outputs=gr.JSON(label=title),
        title=title,
        article=card.read_text(encoding="utf-8").split("---", 2)[2],
    )
