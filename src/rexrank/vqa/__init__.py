"""ReXVQA, ReXrank Challenge V2.0's VQA track: its questions as a Hub dataset (`dataset`), a model's answers scored
(`score`: accuracy overall and per category, failed extractions, CIs, paired tests) and ReXrank's published table
(`official`). The answer rule and the metric's spec are `rexrank.scorers.rexvqa_accuracy`'s."""

from rexrank.catalog import VQA_TASK as TASK  # the task a VQA result names, beside the report tasks

__all__ = ["TASK"]
