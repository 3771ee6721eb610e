"""The metric's Space: paste reports, get per-pair scores, the mean and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("radcliq_v1", "RadCliQ-v1 (ReXrank)", Path(__file__).with_name("README.md"),
                     ("No acute cardiopulmonary process.", "No acute process."))

if __name__ == "__main__":
    demo.launch()
