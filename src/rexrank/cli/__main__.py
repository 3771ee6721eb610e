"""`python -m rexrank.cli` (and `torchrun -m rexrank.cli`): the `rexrank` command."""

from rexrank.cli import run

run()
