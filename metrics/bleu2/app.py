"""A small Space for the metric: paste reports, get BLEU-2 per pair and the mean."""

from pathlib import Path

import gradio as gr

from rexrank.scorers import compute


def score(predictions: str, references: str) -> dict:
    """One report per line in each box."""
    preds, refs = predictions.splitlines(), references.splitlines()
    if len(preds) != len(refs):
        raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
    return compute("bleu2", preds, refs)


demo = gr.Interface(
    fn=score,
    inputs=[
        gr.Textbox(label="Predictions (one report per line)", lines=6, value="No pleural effusion."),
        gr.Textbox(label="References (one report per line)", lines=6, value="No pleural effusion or pneumothorax."),
    ],
    outputs=gr.JSON(label="BLEU-2"),
    title="BLEU-2 (ReXrank)",
    article=(Path(__file__).with_name("README.md")).read_text(encoding="utf-8").split("---", 2)[2],
)

if __name__ == "__main__":
    demo.launch()
