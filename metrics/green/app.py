"""The metric's Space: paste reports, get per-pair GREEN, the mean, the counts and the signature. The judge comes
from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL, OPENAI_API_KEY) or a local copy of the model."""

from pathlib import Path

import gradio as gr

from rexrank.green import compute


def score(predictions: str, references: str) -> dict:
    """One report per line in each box."""
    preds, refs = predictions.splitlines(), references.splitlines()
    if len(preds) != len(refs):
        raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
    return compute(preds, refs)


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(label="Predictions (one report per line)", lines=6, value="Small left effusion."),
            gr.Textbox(label="References (one report per line)", lines=6, value="Small left pleural effusion.")],
    outputs=gr.JSON(label="GREEN"),
    title="GREEN",
    article=Path(__file__).with_name("README.md").read_text(encoding="utf-8").split("---", 2)[2],
)

if __name__ == "__main__":
    demo.launch()
