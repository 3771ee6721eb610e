"""The VQA track's commands: `score-vqa` (a model's answers on ReXVQA) and `import-rexvqa-csv` (ReXrank's table)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rexrank.cli.options import OK, resampling_options, warn, year_month


def add(commands) -> None:
    score = commands.add_parser("score-vqa", help="accuracy of a model's answers on ReXVQA, overall and per category")
    score.add_argument("--predictions", required=True, metavar="P",
                       help="ReXrank's vqa_prediction.json layout (records with model_prediction), or JSONL/CSV "
                            "rows question_id,prediction")
    score.add_argument("--dataset", required=True, metavar="D", help="a folder built by rexrank build-dataset rexvqa")
    score.add_argument("--out", required=True, metavar="O", help="folder for the result JSON and per-question table")
    score.add_argument("--split", help="default: the split the folder was built with")
    score.add_argument("--model-name", help="default: the predictions file's name")
    score.add_argument("--versus", metavar="RESULT",
                       help="another model's result JSON (or per-question table) from score-vqa on the same "
                            "questions: a paired bootstrap of the difference, overall and per category")
    resampling_options(score)
    score.set_defaults(run=cmd_score_vqa)

    official = commands.add_parser("import-rexvqa-csv", help="read ReXrank's published VQA table (vqa_results.csv "
                                   "and model_comparison.csv) into rexrank's form")
    official.add_argument("results", metavar="vqa_results.csv")
    official.add_argument("comparison", metavar="model_comparison.csv")
    official.add_argument("--out", metavar="DIR", help="write DIR/rexvqa.vqa.official.json")
    official.add_argument("--as-of", type=year_month, metavar="YYYY-MM", help="when the table was published")
    official.set_defaults(run=cmd_import_vqa)


def cmd_score_vqa(args: argparse.Namespace) -> int:
    from rexrank.vqa.dataset import load_questions
    from rexrank.vqa.score import paired, read_per_question, read_predictions, score, table, write_results

    questions, split = load_questions(args.dataset, args.split)
    predictions = read_predictions(args.predictions)
    scores = score(questions, predictions, args.resamples, args.seed, where=args.predictions)
    if scores.missing:
        warn(f"{len(scores.missing):,} question(s) have no prediction and count as wrong (failed extractions), e.g. "
             + ", ".join(scores.missing[:5]))
    print("\n".join(table(scores.rows)))
    print(f"signature: {scores.signature}")
    model = args.model_name or Path(args.predictions).stem
    path = write_results(args.out, model, split, scores)
    print(f"wrote {path}")
    if args.versus:
        other = read_per_question(args.versus)
        print(f"\n{model} minus {Path(args.versus).name} (paired bootstrap, {args.resamples:,} resamples)")
        for name, test in paired(scores.per_question, other, args.resamples, args.seed).items():
            print(f"{name:<38} {test['delta']:+.4f}  [{test['low']:+.4f}, {test['high']:+.4f}]  "
                  f"p={test['p_value']:.4f}")
    return OK


def cmd_import_vqa(args: argparse.Namespace) -> int:
    from rexrank.vqa.official import read_official, write_official

    rows = read_official(args.results, args.comparison)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    if args.out:
        print(f"wrote {write_official(args.out, rows, args.as_of)}")
    return OK
