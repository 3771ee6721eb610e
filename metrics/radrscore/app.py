"""The metric's Space: paste one model output, its reference reasoning steps and its report; get RadRScore, its three
components and the signature. The judge comes from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL,
OPENAI_API_KEY). Pasted text is sent to that judge: do not paste credentialed reports (MIMIC-CXR, CheXpert)."""

from pathlib import Path

import gradio as gr

from rexrank.hf_metric import compute


def score(prediction: str, reasoning: str, report: str) -> dict:
    """One item: reasoning steps one per line."""
    steps = [line.strip() for line in reasoning.splitlines() if line.strip()]
    return compute("radrscore", [prediction], [steps], reports=[report], dataset=None)  # pasted text, not a dataset


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(label="Model output (<think>...</think><answer>...</answer>)", lines=6,
                       value="<think>The costophrenic angles are sharp, so there is no effusion.</think>"
                             "<answer>B</answer>"),
            gr.Textbox(label="Reference reasoning steps (one per line)", lines=6,
                       value="Examine the costophrenic angles for blunting.\nThe angles are sharp: no effusion."),
            gr.Textbox(label="Report", lines=4, value="No pleural effusion.")],
    outputs=gr.JSON(label="RadRScore"),
    title="RadRScore",
    article=Path(__file__).with_name("README.md").read_text(encoding="utf-8").split("---", 2)[2],
)

if __name__ == "__main__":
    demo.launch()
