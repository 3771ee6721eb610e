"""The metric's Space: paste reports, get per-pair scores, the mean and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("radgraph", "RadGraph-F1 (ReXrank)", Path(__file__).with_name("README.md"),
                     ("Small left pleural effusion.", "Small left effusion."))

if __name__ == "__main__":
    demo.launch()
