"""The metric's Space: paste reports, get per-pair scores, the mean and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("bleu2", "BLEU-2 (ReXrank)", Path(__file__).with_name("README.md"),
                     ("No pleural effusion.", "No pleural effusion or pneumothorax."))

if __name__ == "__main__":
    demo.launch()
