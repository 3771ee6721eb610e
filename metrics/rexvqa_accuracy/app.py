"""The metric's Space: paste a model's answer, the question's options (one per line) and the correct letter; get
the letter read, whether it is right, and the signature."""

from pathlib import Path

import gradio as gr

from rexrank.hf_metric import compute


def score(prediction: str, options: str, correct: str) -> dict:
    """One question: options one per line, `A. ...`."""
    lines = [line.strip() for line in options.splitlines() if line.strip()]
    return compute("rexvqa_accuracy", [prediction], [correct.strip()], options=[lines])


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(label="Model answer", lines=3, value="The answer is (B): a small left pleural effusion."),
            gr.Textbox(label="Options (one per line)", lines=4,
                       value="A. No pleural effusion\nB. Small left pleural effusion\nC. Pneumothorax\n"
                             "D. Cardiomegaly"),
            gr.Textbox(label="Correct letter", value="B")],
    outputs=gr.JSON(label="ReXVQA accuracy"),
    title="ReXVQA accuracy",
    article=Path(__file__).with_name("README.md").read_text(encoding="utf-8").split("---", 2)[2],
)

if __name__ == "__main__":
    demo.launch()
