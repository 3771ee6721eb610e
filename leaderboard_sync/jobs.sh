#!/usr/bin/env bash
# The maintainers' jobs as HF Jobs, beside the webhook app: a daily sweep that reviews every open pull request the
# webhook may have missed (the Hub allows a webhook 1,000 triggers a day), and a daily aggregate. Run once to create
# the schedules; `hf jobs scheduled ps` lists them. The token and the results repo come from the environment.
set -euo pipefail
: "${REXRANK_RESULTS_REPO:?set REXRANK_RESULTS_REPO=ORG/results}"
: "${REXRANK_REVIEW_DATASETS:?set REXRANK_REVIEW_DATASETS=mimic-cxr=ORG/mimic-cxr-test,...}"
image=python:3.11
setup="pip install -q 'rexrank[models,backend]' &&"
datasets=$(printf -- '--dataset %s ' ${REXRANK_REVIEW_DATASETS//,/ })

# The review signs the ledger entries it writes: the signing key is a secret of that job only; the aggregate checks
# the ledger with the public keys, a plain variable (docs/submitting.md, the maintainers' setup).
: "${REXRANK_LEDGER_KEY:?set REXRANK_LEDGER_KEY to the private key (a secret of the review job only)}"
: "${REXRANK_LEDGER_KEYS:?set REXRANK_LEDGER_KEYS to the public key(s) that python -m rexrank.backend ledger-key printed}"
hf jobs scheduled run --secrets HF_TOKEN --secrets REXRANK_LEDGER_KEY --env REXRANK_LEDGER_KEYS="$REXRANK_LEDGER_KEYS" \
  --name rexrank-review-sweep @daily $image \
  bash -c "$setup python -m rexrank.backend review --hub $REXRANK_RESULTS_REPO $datasets"
hf jobs scheduled run --secrets HF_TOKEN --env REXRANK_LEDGER_KEYS="$REXRANK_LEDGER_KEYS" \
  --name rexrank-aggregate @daily $image \
  bash -c "$setup python -m rexrank.backend aggregate --hub $REXRANK_RESULTS_REPO"
