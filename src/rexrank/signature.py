"""Score signatures, in the manner of sacrebleu: a number knows how it was made.

A signature names the metric and its implementation version, the settings and model weights that change
the number, the bootstrap that made its confidence interval, and the package versions. Two numbers may be
ranked against each other only when their `point_key`s (everything that changes the point value) agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rexrank import __version__


@dataclass(frozen=True)
class Signature:
    metric: str
    version: str
    settings: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # name -> "repo@revision"
    components: tuple[Signature, ...] = ()  # for composites such as RadCliQ
    bootstrap: tuple[int, int] | None = None  # (resamples, seed)
    packages: dict[str, str] = field(default_factory=lambda: {"rexrank": __version__})

    def with_bootstrap(self, resamples: int, seed: int) -> Signature:
        return replace(self, bootstrap=(resamples, seed))

    def _core(self) -> list[str]:
        parts = [f"{self.metric}:{self.version}"]
        parts += [f"{name}:{model}" for name, model in self.models.items()]
        parts += [f"{key}:{value}" for key, value in self.settings.items()]
        parts += [c.compact() for c in self.components]
        return parts

    def compact(self) -> str:
        """One segment, as a component inside a composite's signature."""
        text = f"{self.metric}:{self.version}" + "".join(f"@{m}" for m in self.models.values())
        return text + "".join(f":{k}={v}" for k, v in self.settings.items())

    @property
    def point_key(self) -> str:
        """Everything that determines the point value (not the CI, not package versions)."""
        return "|".join(self._core())

    def __str__(self) -> str:
        parts = self._core()
        if self.bootstrap:
            parts.append(f"boot:{self.bootstrap[0]}:seed={self.bootstrap[1]}")
        parts += [f"{name}:{version}" for name, version in self.packages.items()]
        return "|".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "version": self.version,
            "settings": dict(self.settings),
            "models": dict(self.models),
            "components": [c.to_dict() for c in self.components],
            "bootstrap": list(self.bootstrap) if self.bootstrap else None,
            "packages": dict(self.packages),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Signature:
        boot = data.get("bootstrap")
        return cls(
            metric=data["metric"],
            version=str(data["version"]),
            settings={k: str(v) for k, v in data.get("settings", {}).items()},
            models={k: str(v) for k, v in data.get("models", {}).items()},
            components=tuple(cls.from_dict(c) for c in data.get("components", [])),
            bootstrap=(int(boot[0]), int(boot[1])) if boot else None,
            packages={k: str(v) for k, v in data.get("packages", {}).items()},
        )
