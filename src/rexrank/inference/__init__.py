"""Code submissions: the maintainers run the submitted model (ReXrank's `inference.py` contract) in a sandbox."""
