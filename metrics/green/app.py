"""The metric's Space: paste reports, get per-pair GREEN, the mean, the counts and the signature. The judge comes
from the Space's secrets (REXRANK_JUDGE_URL, REXRANK_JUDGE_MODEL, OPENAI_API_KEY) or a local copy of the model."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("green", "GREEN", Path(__file__).with_name("README.md"),
                     ("Small left effusion.", "Small left pleural effusion."))

if __name__ == "__main__":
    demo.launch()
