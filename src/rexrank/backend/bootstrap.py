"""The bootstrap job: a results repo started from the official ReXrank figures shipped with rexrank (imported, as
published, no CIs), then aggregated, so the board shows the field from its first day. Run again after a rexrank
release that updates the figures: the imported files are replaced, submissions are not touched."""

from __future__ import annotations

import pandas as pd

from rexrank.board.aggregate import aggregate_hub
from rexrank.official import IMPORTED, SHIPPED


def bootstrap(repo_id: str, token: str | None = None, private: bool = False) -> tuple[pd.DataFrame, str]:
    """Create `repo_id` (a dataset) if it does not exist, commit the shipped imported rows to `imported/`, aggregate;
    the board and the aggregate commit's URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    files = sorted((SHIPPED / IMPORTED).glob("*.json"))
    api.upload_folder(folder_path=str(SHIPPED), repo_id=repo_id, repo_type="dataset",
                      allow_patterns=[f"{IMPORTED}/*.json"],
                      commit_message=f"Import the official ReXrank figures (rexrank.ai, as published): "
                                     f"{len(files)} rows")
    return aggregate_hub(repo_id, token=token)
