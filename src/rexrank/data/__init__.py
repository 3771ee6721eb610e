"""Test splits and predictions: loading, checking, lining up."""

from rexrank.data.predictions import Aligned, align, load_predictions
from rexrank.data.split import Split, load_split
from rexrank.errors import InputError

__all__ = ["Aligned", "InputError", "Split", "align", "load_predictions", "load_split"]
