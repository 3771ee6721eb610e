"""The `rexrank` command.

Exit codes: 0 done; 1 `crosscheck`: rexrank and CXR-Report-Metric differ; 2 bad input, or the Hub could not be
reached or refused (nothing written or sent); 3 done, but a requested metric could not run (the others' results are
written and the message says how to enable it); 130 interrupted (Ctrl-C: run it again).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rexrank import __version__
from rexrank.cli import arena, board, crosscheck, data, inference, scoring, studies, vqa, weights
from rexrank.cli.options import BAD_INPUT
from rexrank.errors import InputError
from rexrank.models import ModelUnavailable, clear_overrides, set_override

INTERRUPTED = ("rexrank: interrupted; nothing half-written: run the same command again to resume (model features "
               "and judge replies computed so far are kept in the cache)")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose epilog may be a function: called only when the help is shown (build-dataset's lists
    each reader's files, which would import every data module for any command)."""

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def parser() -> argparse.ArgumentParser:
    top = Parser(prog="rexrank", description=__doc__.split("\n")[0],
                                  epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawTextHelpFormatter)
    top.add_argument("--version", action="version", version=f"rexrank {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    # the order `rexrank --help` lists them in
    for concern in (scoring, studies, crosscheck, inference, weights, data, vqa, board, arena):
        concern.add(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        for key, path in getattr(args, "model", []):
            set_override(key, path)
        return args.run(args)
    except (InputError, OSError, ModelUnavailable) as err:  # ModelUnavailable here: an override of an unknown model
        print(f"rexrank: error: {err}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it
    finally:
        clear_overrides()  # they belong to this invocation only


def run() -> None:
    """The `rexrank` command. After Ctrl-C (everything written is whole by then) it exits at once: a judge worker
    thread still blocked in a request must not hold the process until that request's deadline."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)

