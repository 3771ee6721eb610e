"""Errors a user can act on: each message names the file, the study and the rule."""


class InputError(ValueError):
    """Bad input from the user (a file, a study, an option); nothing was written."""


class MetricUnavailable(RuntimeError):
    """A metric cannot run here (weights missing, component not computable); the message says how to fix it."""
