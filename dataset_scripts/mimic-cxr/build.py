"""Build this folder's dataset from your own download (README.md: which files, what it writes). The same as
`rexrank build-dataset mimic-cxr ...`: `python dataset_scripts/mimic-cxr/build.py --help`."""

import sys

from rexrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "mimic-cxr", *sys.argv[1:]]))
