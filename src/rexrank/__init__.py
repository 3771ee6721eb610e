"""rexrank: the ReXrank benchmark for AI-generated chest X-ray reports.

`rexrank.functional` (every metric as a function) and `rexrank.rewards` (every metric as a TRL reward) are opened on
first use (PEP 562), so `import rexrank` loads nothing but this file."""

__version__ = "0.1.0"

# The package's two faces, opened by name when first asked for: the one arrow up from layer 0 (docs/architecture.md).
LAZY = ("functional", "rewards")


def __getattr__(name: str):
    if name in LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
