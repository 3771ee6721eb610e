"""Makes tests/parity/golden/: the reference packages' answers that tests read instead of running them (issue 38).

    python tests/parity/make_golden.py [--reference-python .venv-reference/bin/python]

Builds the tiny models as the test fixtures do (tests/conftest.py), sends each kept job to the reference venv
(tests/parity/make_venv.sh) with run_references.py, and writes the answers with the fingerprint of what they were made
from (tests/fixtures/golden.py). Run it when a test says its answers were made from other inputs; commit the files.
  radgraph-0.1.18   radgraph 0.1.18's graphs of tests/test_reference_parity.py's GRAPH_TEXTS and F1RadGraph's rewards
                    (about 75 s: the package's post-processing is quadratic in the random model's spans)
  rush-sentences    RaTEScore 0.6.0's sentence_split of tests/test_ratescore_sentences.py's texts (about 40 s)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS.parent / "src")]

import test_ratescore_sentences as sentences  # noqa: E402
import test_reference_parity as parity  # noqa: E402
from fixtures import golden  # noqa: E402
from fixtures.reference_venv import PYTHON, run_job  # noqa: E402
from fixtures.tiny_models import build_bert_base, build_radgraph  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference-python", default=PYTHON)
    parser.add_argument("--only", choices=["radgraph-0.1.18", "rush-sentences"])
    args = parser.parse_args()
    if not os.path.exists(args.reference_python):
        sys.exit(f"make_golden: no reference venv at {args.reference_python}: run tests/parity/make_venv.sh")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="rexrank-golden-") as tmp:
        tmp = Path(tmp)
        if args.only in (None, "radgraph-0.1.18"):
            bert = build_bert_base(tmp / "bert-base-uncased")
            model = build_radgraph(tmp / "radgraph" / "radgraph", bert)
            job = parity.radgraph_job(model)
            (tmp / "radgraph-job").mkdir()
            answers = run_job(args.reference_python, tmp / "radgraph-job", {"radgraph": job})
            print(golden.write("radgraph-0.1.18",
                               golden.fingerprint(job, {"radgraph": model, "bert-base-uncased": bert}),
                               {k: answers[k] for k in ("radgraph", "f1radgraph")}))
        if args.only in (None, "rush-sentences"):
            job = {"rush": {"texts": sentences.rush_texts()}}
            (tmp / "rush-job").mkdir()
            answers = run_job(args.reference_python, tmp / "rush-job", job)
            print(golden.write("rush-sentences", golden.fingerprint(job, {}),
                               {"rush_sentences": answers["rush_sentences"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
