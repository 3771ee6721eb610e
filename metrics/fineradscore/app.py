"""The metric's Space: paste reports, get each report's corrections and severities, the mean, 1/FineRadScore and the
signature. The judge comes from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL, OPENAI_API_KEY)."""

from pathlib import Path

import gradio as gr

from rexrank.fineradscore import compute


def score(predictions: str, references: str) -> dict:
    """One report per line in each box."""
    preds, refs = predictions.splitlines(), references.splitlines()
    if len(preds) != len(refs):
        raise gr.Error(f"{len(preds)} prediction lines but {len(refs)} reference lines")
    return compute(preds, refs)


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(label="Predictions (one report per line)", lines=6,
                       value="Right lower lobe opacity. No pneumothorax."),
            gr.Textbox(label="References (one report per line)", lines=6,
                       value="Left lower lobe opacity. No pneumothorax.")],
    outputs=gr.JSON(label="FineRadScore"),
    title="FineRadScore",
    article=Path(__file__).with_name("README.md").read_text(encoding="utf-8").split("---", 2)[2],
)

if __name__ == "__main__":
    demo.launch()
