"""CheXbert macro-F1 (14)'s Space: paste the inputs, get what its `evaluate` module computes.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget('chexbert_macro_f1_14', Path(__file__).with_name("README.md"))

if __name__ == "__main__":
    demo.launch()
