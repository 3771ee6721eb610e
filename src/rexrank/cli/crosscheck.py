"""`rexrank crosscheck`: rexrank's per-study scores against the CSV CXR-Report-Metric wrote for the same predictions."""

from __future__ import annotations

import argparse
import json

from rexrank.cli.options import model_options, whole
from rexrank.reports import TASKS

AGREE, DIFFER = 0, 1


def add(commands) -> None:
    check = commands.add_parser(
        "crosscheck", help="compare rexrank's per-study scores with the CSV CXR-Report-Metric wrote for the same "
                           "predictions", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score PREDICTIONS on --dataset with rexrank's metrics that can run here (BLEU-2 always; BERTScore,"
                    "\nSembScore, RadGraph and RadCliQ when their weights are here, else a line says so) and compare "
                    "each\nstudy with the CSV rajpurkarlab/CXR-Report-Metric's calc_metric wrote for them (columns "
                    "study_id,\nreport, bleu_score, bertscore, semb_score, radgraph_combined, RadCliQ-v0, RadCliQ-v1). "
                    "Per metric:\nthe two means, the largest per-study difference, how many studies differ beyond the "
                    "tolerance\n(BLEU-2 exact; model metrics 1e-4, float32 rounding across stacks; RadCliQ "
                    "propagated) and the\nworst studies; and whether the CSV's report column is the predictions given."
                    "\n\nexit status: 0 all agree; 1 some differ (a metric, a report text, a study missing on either "
                    "side);\n2 bad input.")
    check.add_argument("predictions", help="the predictions, as rexrank score --predictions takes them")
    check.add_argument("--against", required=True, metavar="CSV",
                       help="the per-study CSV CXR-Report-Metric wrote for these predictions (its OUT_FILE)")
    check.add_argument("--dataset", required=True, help="the split, as rexrank score --dataset takes it")
    check.add_argument("--task", required=True, choices=TASKS, help="the task the CSV was made for")
    check.add_argument("--split", help="as rexrank score --split")
    check.add_argument("--dataset-name", help="as rexrank score --dataset-name")
    check.add_argument("--positional", action="store_true",
                       help="the CSV's study ids are positions 0..n-1 in the predictions file (as when ids that are "
                            "not numbers were replaced, which CXR-Report-Metric's RadGraph step needs)")
    check.add_argument("--metrics", help="comma-separated, some of those the CSV has (default: all it has)")
    check.add_argument("--worst", type=whole(0), default=5, metavar="N", help="studies shown per metric (default 5)")
    check.add_argument("--json", action="store_true", help="one JSON object instead of the report")
    model_options(check)
    check.add_argument("--quiet", action="store_true", help="no progress bars")
    check.set_defaults(run=cmd_crosscheck)


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from rexrank.cli.scoring import not_run_here
    from rexrank.crosscheck import crosscheck
    from rexrank.scorers import parse_metrics

    metrics = parse_metrics(args.metrics) if args.metrics else None
    result = crosscheck(args.predictions, args.dataset, args.against, args.task, split=args.split,
                        dataset_name=args.dataset_name, positional=args.positional, metrics=metrics,
                        worst=args.worst, device=args.device, batch_size=args.batch_size, dtype=args.dtype,
                        progress=not args.quiet and not args.json)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print("\n".join(result.lines(skipped=False)))
        if result.skipped:
            print(not_run_here(result.skipped))
    return AGREE if result.agree else DIFFER
