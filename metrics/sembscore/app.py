"""The metric's Space: paste reports, get per-pair scores, the mean and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget("semb_score", "SembScore (ReXrank)", Path(__file__).with_name("README.md"),
                     ("Mild cardiomegaly.", "The heart is mildly enlarged."))

if __name__ == "__main__":
    demo.launch()
