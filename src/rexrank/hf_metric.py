"""What every `evaluate` module in metrics/ declares: one prediction and one reference string per example."""

from __future__ import annotations


def report_metric_info(description: str, citation: str, inputs_description: str, codebase_urls: list[str],
                       reference_urls: list[str]):
    import datasets
    import evaluate

    return evaluate.MetricInfo(
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        codebase_urls=codebase_urls,
        reference_urls=reference_urls,
    )
