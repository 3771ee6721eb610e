"""The metric's Space: paste reports, get each report's corrections and severities, the mean, 1/FineRadScore and the
signature. The judge comes from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL, OPENAI_API_KEY)."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("fineradscore", "FineRadScore", Path(__file__).with_name("README.md"),
                     ("Right lower lobe opacity. No pneumothorax.", "Left lower lobe opacity. No pneumothorax."))

if __name__ == "__main__":
    demo.launch()
