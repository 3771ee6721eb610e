"""Build this folder's dataset from your own download (README.md: which files, what it writes). The same as
`rexrank build-dataset rexvqa ...`: `python dataset_scripts/rexvqa/build.py --help`."""

import sys

from rexrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "rexvqa", *sys.argv[1:]]))
