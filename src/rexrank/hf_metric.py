"""What every `evaluate` module in metrics/ declares: one prediction and one reference string per example."""

from __future__ import annotations

# The papers every ReXrank metric module cites (BibTeX).
REXRANK_CITATION = """\
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N
          and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
"""
CXR_REPORT_METRIC_CITATION = """\
@article{yu2023evaluating,
  title={Evaluating progress in automatic chest X-ray radiology report generation},
  author={Yu, Feiyang and Endo, Mark and Krishnan, Rayan and Pan, Ian and Tsai, Andy and Reis, Eduardo Pontes
          and Fonseca, Eduardo Kaiser Ururahy Nunes and Lee, Henrique Min Ho and Abe, Zahra Shakeri Hossein
          and Langlotz, Curtis P and others},
  journal={Patterns},
  volume={4},
  number={9},
  year={2023}
}
"""


def report_metric_info(description: str, citation: str, inputs_description: str, codebase_urls: list[str],
                       reference_urls: list[str], features=None):
    """`features`: by default one prediction and one reference string; a module whose references may also be lists
    (RadRScore's reasoning steps) passes evaluate's list of alternatives."""
    import datasets
    import evaluate

    return evaluate.MetricInfo(
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        features=features or datasets.Features({"predictions": datasets.Value("string"),
                                                "references": datasets.Value("string")}),
        codebase_urls=codebase_urls,
        reference_urls=reference_urls,
    )
