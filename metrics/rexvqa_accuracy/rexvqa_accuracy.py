"""ReXVQA accuracy (ReXrank Challenge V2.0, VQA): the option letter read from a model's free text, against the correct
letter, every question counted (an unreadable answer is wrong and counted as a failed extraction)."""

import datasets
import evaluate

from rexrank.catalog import REXVQA_CITATION as CITATION
from rexrank.hf_metric import REXRANK_CITATION, compute, report_metric_info

_CITATION = CITATION + REXRANK_CITATION

_DESCRIPTION = """\
Accuracy on ReXVQA's multiple-choice questions as rexrank reads answers (docs/metrics.md §12, signed
`parser:letters-v1`): the letter is read from the model's free text ("B", "B.", "(B)", "Answer: B", "The answer is
B", "B. <its text>", or the option's text alone); two different letters, no letter, or a letter that is not an
option is a failed extraction, and the question counts as wrong. The authors publish no evaluation code; ReXrank's
VQA table reports each model's failed extractions beside its accuracy, as this module does.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the model's answers, as it wrote them (ReXrank's `model_prediction`).
    references (list of str): each question's correct letter (ReXVQA's `correct_answer`).
    options (list of list of str): each question's options, `["A. ...", "B. ...", ...]` (ReXVQA's `options`).
Returns:
    rexvqa_accuracy (float): the share of questions answered with the correct letter, in [0, 1].
    rexvqa_accuracy_per_sample (list of float): 1.0 or 0.0 per question.
    answers (list of str or None): the letter read from each answer, None where none could be.
    failed_extractions (int), failures (dict): the answers no letter could be read from, by reason (empty_output,
        no_letter, ambiguous, not_an_option).
    signature (str): how the number was made, e.g. `rexvqa_accuracy:1|parser:letters-v1|unreadable:wrong|...`.
Examples:
    >>> rexvqa_accuracy = evaluate.load("rexrank/rexvqa_accuracy")
    >>> options = [["A. No pleural effusion", "B. Small left pleural effusion", "C. Pneumothorax",
    ...             "D. Cardiomegaly"]] * 3
    >>> results = rexvqa_accuracy.compute(predictions=["The answer is B.", "Small left pleural effusion", "A or B"],
    ...                                   references=["B", "A", "B"], options=options)
    >>> round(results["rexvqa_accuracy"], 4), results["failed_extractions"]
    (0.3333, 1)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RexvqaAccuracy(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/ReXrank"],
                                  reference_urls=["https://arxiv.org/abs/2506.04353",
                                                  "https://huggingface.co/datasets/rajpurkarlab/ReXVQA"],
                                  features=datasets.Features({"predictions": datasets.Value("string"),
                                                              "references": datasets.Value("string")}))

    def _compute(self, predictions, references, options=None):
        if options is None:
            raise ValueError("ReXVQA accuracy needs options=[[\"A. ...\", \"B. ...\"], ...]: each question's options")
        return compute("rexvqa_accuracy", predictions, references, options=options)
