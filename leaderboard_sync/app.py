"""The maintainers' webhook app, as a Hub Space: each event of the results repo runs the review, private scoring
and aggregate jobs it asks for (rexrank.backend.webhook_server, over rexrank.backend.webhook). Secrets:
REXRANK_WEBHOOK_SECRET (the Hub webhook's), HF_TOKEN (write access to the results repo, read access to the private
references); variables: REXRANK_RESULTS_REPO, REXRANK_REVIEW_DATASETS, REXRANK_PRIVATE_REFERENCES."""

import sys

from rexrank.backend.webhook_server import serve
from rexrank.errors import InputError

if __name__ == "__main__":
    try:
        serve()
    except InputError as err:
        print(f"rexrank webhook: error: {err}", file=sys.stderr)
        sys.exit(2)
