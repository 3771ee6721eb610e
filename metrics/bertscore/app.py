"""The metric's Space: paste reports, get per-pair scores, the mean and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("bertscore", "BERTScore (ReXrank)", Path(__file__).with_name("README.md"),
                     ("Heart size is normal.", "The heart size is within normal limits."))

if __name__ == "__main__":
    demo.launch()
