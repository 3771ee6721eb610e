"""Processes and memory of a sandboxed run, bounded where the kernel allows (docs/submitting.md, "What the sandbox
allows").

A control group holds the run (bubblewrap and all it starts): `pids.max` bounds its tasks (a fork bomb gets EAGAIN),
`memory.max` (v2) or `memory.limit_in_bytes` (v1) its memory, tmpfs pages it writes included, and the kernel's OOM
killer ends it past that. rexrank makes the group under its own (cgroup v2, where the parent delegates the pids and
memory controllers; else the v1 hierarchies), which needs write access there: a root job in its container, or a
systemd-delegated user. Where none can be made the run says so in its log line, and falls back to RLIMIT_NPROC for
processes (counted per real user and ignored for root, which the kernel exempts) and to no memory bound beyond the
machine's: RLIMIT_AS is not used, as CUDA reserves far more address space than it uses.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass
class Group:
    """One run's control group (one folder per hierarchy: one for v2, pids and memory for v1)."""

    folders: dict[str, Path] = field(default_factory=dict)  # "pids" / "memory" -> its folder (the same one for v2)

    @property
    def mechanism(self) -> str:
        if not self.folders:
            return "none"
        return "cgroup v2" if len(set(self.folders.values())) == 1 else "cgroup v1"

    def join(self) -> None:
        """In the child, before bubblewrap: move this process (and so all it will start) into the group."""
        for folder in dict.fromkeys(self.folders.values()):
            (folder / "cgroup.procs").write_text("0")

    def ran_out_of_memory(self) -> bool:
        folder = self.folders.get("memory")
        if folder is None:
            return False
        for name in ("memory.events", "memory.oom_control"):  # v2; v1 (kernel >= 4.13 counts oom_kill there too)
            if (path := folder / name).is_file():
                fields = dict(line.split() for line in path.read_text().splitlines() if len(line.split()) == 2)
                if int(fields.get("oom_kill", 0)) > 0:
                    return True
        return False

    def remove(self) -> None:
        for folder in dict.fromkeys(self.folders.values()):
            try:
                folder.rmdir()
            except OSError:
                pass


def make_group(processes: int, memory: int | None) -> Group:
    """A fresh control group bounding `processes` tasks and `memory` bytes; an empty Group where none can be made."""
    name = f"rexrank-sandbox-{uuid.uuid4().hex[:12]}"
    for attempt in (_v2, _v1):
        group = attempt(name, processes, memory)
        if group.folders:
            return group
    return Group()


def _own(hierarchy: str) -> str | None:
    """This process's path in a hierarchy ("" for v2's unified one), from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if (hierarchy == "" and number == "0") or hierarchy in controllers.split(","):
            return path.lstrip("/")
    return None


def _v2(name: str, processes: int, memory: int | None) -> Group:
    own = _own("")
    if own is None or not (ROOT / "cgroup.controllers").is_file():
        return Group()
    parent = ROOT / own
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return Group()
    if "pids" not in enabled or (memory is not None and "memory" not in enabled):
        return Group()
    return _made({"pids": parent / name, "memory": parent / name},
                 {"pids.max": processes, **({"memory.max": memory, "memory.swap.max": 0} if memory else {})})


def _v1(name: str, processes: int, memory: int | None) -> Group:
    folders = {}
    for controller in ("pids", "memory") if memory else ("pids",):
        own = _own(controller)
        if own is None or not (ROOT / controller).is_dir():
            return Group()
        folders[controller] = ROOT / controller / own / name
    return _made(folders, {"pids.max": processes, **({"memory.limit_in_bytes": memory} if memory else {})})


def _made(folders: dict[str, Path], settings: dict[str, int]) -> Group:
    group = Group(folders)
    try:
        for folder in dict.fromkeys(folders.values()):
            folder.mkdir()
        for key, value in settings.items():
            folder = folders["pids" if key.startswith("pids") else "memory"]
            if (folder / key).exists():
                (folder / key).write_text(str(value))
            elif key != "memory.swap.max":
                raise OSError(f"no {key}")
    except OSError:
        group.remove()
        return Group()
    return group


def machine_memory() -> int:
    """This machine's memory in bytes (the default bound is three quarters of it)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
