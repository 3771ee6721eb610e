"""One rule for every requirement a submission writes (docs/security.md, rule 16), wherever it writes it.

`requirements.txt` lines, a local package's `[project] dependencies`, `optional-dependencies` and
`[build-system] requires`, `environment.yaml`'s dependencies: each entry is a name, extras, version specifiers and
markers (PEP 508; for conda, a match spec of a name and a version), re-written from its parsed form, so what a package
tool is handed is what was checked. No option (`--requirement=/proc/self/environ`, `--index-url`, `--report`), no URL
(`x @ http://...`, `x @ file://...`), no path: pip prepares a named project's metadata by running its build backend,
and follows URLs and options wherever they point. The one exception: a `requirements.txt` line may name a folder inside
model/ (a local package, built in the sandbox), resolved (links and `..`) before it is compared.

A refusal is one line: `FILE ENTRY: 'VALUE' WHY`. Submitted TOML and YAML are read with a bound on their size, and
every shape (wrong types at any level, nesting deep enough to exhaust the parser's recursion) is a refusal, never a
traceback. Nothing here runs on the maintainers' host in the job: it runs in the fetch sandbox
(rexrank.inference.fetch); `check`, the same reading without fetching, runs on the submitter's machine (`rexrank
submit --model`, dry run or not), so a refusal is known before a pull request is opened; tests call it directly.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from rexrank.errors import InputError
from rexrank.text import shown

MAX_FILE_BYTES = 256 * 1024  # a requirements.txt or pyproject.toml: read whole, so bounded
MAX_ENTRY = 400  # characters of one requirement
SUBMISSION = "/submission/"  # where the sandbox shows model/: a line may name a folder by it
DEFAULT_BUILD = ("setuptools>=40.8.0", "wheel")  # pip's for a package without [build-system] (PEP 517's, and wheel)
CONDA_CHANNELS = ("conda-forge", "defaults", "nvidia", "pytorch", "bioconda")  # names only: a URL could be anywhere
# a conda match spec of a name and a version ("numpy", "python=3.11", "pytorch::pytorch>=2.1,<3", "cuda 12.1.*"):
# no URL, path, bracketed key (`[url=...]`) or channel but the listed ones
CONDA_SPEC = re.compile(r"(?:(?P<channel>[a-z0-9_-]+)::)?[A-Za-z0-9_][A-Za-z0-9._-]*"
                        r"(?:\s*[<>=!~]{0,2}\s*[0-9A-Za-z.*+_,|<>=!~-]+)?")


class BuildFailed(InputError):
    """The environment could not be built; the message says why in rexrank's words, the log is pip's or conda's."""


@dataclass(frozen=True)
class Plan:
    """What requirements.txt asks for: index requirements (its own lines and its local packages' static
    dependencies), the local packages' build requirements, and the local packages (folders in model/)."""

    index: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    local: tuple[str, ...] = ()


def refused(file: str, entry: str, value: object, why: str) -> BuildFailed:
    """The one shape of a refusal: the file, the entry, what it holds (a string shown, cut; else its TOML type)."""
    said = repr(shown(value, 80)) if isinstance(value, str) else f"(a {type(value).__name__})"
    return BuildFailed(f"{file} {entry}: {said} {why}")


def requirement(value: object, file: str, entry: str) -> str:
    """`value` as a PEP 508 requirement on the maintainers' index (name, extras, version, markers), re-written from
    its parsed form; BuildFailed naming `file` and `entry` otherwise."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not isinstance(value, str):
        raise refused(file, entry, value, "is not a string")
    text = value.strip()
    if len(text) > MAX_ENTRY:
        raise refused(file, entry, text, f"is longer than {MAX_ENTRY} characters")
    if text.startswith("-"):
        raise refused(file, entry, text, "is an option; only requirements (name, extras, version, markers) are "
                                         "read: the job image brings torch and CUDA, the index is the maintainers'")
    try:
        parsed = Requirement(text)
    except InvalidRequirement:
        raise refused(file, entry, text, "is not a requirement (PEP 508: name, extras, version, markers)") from None
    if parsed.url:
        raise refused(file, entry, text, "names a URL or a path; give the package's name and version (fetched from "
                                         "the maintainers' index), or a folder inside model/ in requirements.txt")
    written = str(parsed)
    # the plan is a requirements file: pip expands ${VARIABLE} in one, and reads ` -x` and ` #` as options, comments
    if "${" in written or not written.isprintable() or re.search(r"\s[-#]", written):
        raise refused(file, entry, text, "holds ${...}, an option or comment inside a marker, or a character that "
                                         "does not print")
    return written


def plan(root: Path) -> Plan:
    """requirements.txt in the model folder `root`, and its local packages' pyproject.toml, read as the module says;
    BuildFailed naming the first entry that is not allowed."""
    root = root.resolve()
    index, build, local = [], [], []
    for number, line in _lines(root / "requirements.txt"):
        entry = f"line {number}"
        if _names_a_folder(line):
            folder = _folder(root, line, entry)
            name = folder.relative_to(root).as_posix()
            local.append(name)
            needs, deps = _static(folder, f"{name}/pyproject.toml" if name != "." else "pyproject.toml")
            build += needs
            index += deps
        else:
            index.append(requirement(line, "requirements.txt", entry))
    return Plan(tuple(dict.fromkeys(index)), tuple(dict.fromkeys(build)), tuple(local))


def check(root: Path) -> None:
    """What the fetch sandbox reads first in the model folder `root`, as the job chooses it: requirements.txt (and
    its local packages' pyproject.toml), or, without one, environment.yaml; BuildFailed naming the first entry not
    allowed. Only the files are read: no package tool runs."""
    if (root / "requirements.txt").is_file():
        plan(root)
    elif (root / "environment.yaml").is_file():
        conda(root / "environment.yaml")


def _lines(path: Path) -> list[tuple[int, str]]:
    data = _bounded(path, "requirements.txt")
    lines = []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        line = "" if raw.lstrip().startswith("#") else raw.split(" #")[0].strip()
        if line.endswith("\\"):
            raise refused("requirements.txt", f"line {number}", line, "continues on the next line; write it on one")
        if line:
            lines.append((number, line))
    return lines


def _bounded(path: Path, file: str) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise BuildFailed(f"{file}: not a plain file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BuildFailed(f"{file}: {path.stat().st_size:,} bytes, more than {MAX_FILE_BYTES // 1024} KiB")
    return path.read_bytes()[:MAX_FILE_BYTES]


def _names_a_folder(line: str) -> bool:
    """A path, not a requirement: `./pkg`, `/submission/pkg`, `pkg/sub` (a URL has `@` or `://` and is refused as
    a requirement)."""
    head = line.split(";")[0]
    if line.startswith("-"):
        return False
    return line.startswith((".", "/")) or ("/" in head and "@" not in line and "://" not in line)


def _folder(root: Path, line: str, entry: str) -> Path:
    """The folder a requirements.txt line names, resolved (links, `..`) before it is compared with model/."""
    relative = line[len(SUBMISSION):] if line.startswith(SUBMISSION) else line
    folder = Path(relative).resolve() if relative.startswith("/") else (root / relative).resolve()
    if folder != root and root not in folder.parents:
        raise refused("requirements.txt", entry, line, "is a folder outside model/: only the submission's own "
                                                       "packages are built")
    if not folder.is_dir():
        raise refused("requirements.txt", entry, line, "names no such folder in model/")
    return folder


def _static(folder: Path, file: str) -> tuple[list[str], list[str]]:
    """A local package's build requirements and static dependencies (its optional ones checked too), from its
    pyproject.toml; PEP 517's default for a package without one."""
    path = folder / "pyproject.toml"
    if not path.exists():
        return list(DEFAULT_BUILD), []
    table = toml(path, file)
    system = _table(table, "build-system", file)
    project = _table(table, "project", file)
    needs = [requirement(v, file, f"[build-system].requires[{i}]")
             for i, v in enumerate(_strings(system, "requires", file, "[build-system]", list(DEFAULT_BUILD)))]
    dynamic = _strings(project, "dynamic", file, "[project]", [])
    deps = [requirement(v, file, f"[project].dependencies[{i}]")
            for i, v in enumerate(_strings(project, "dependencies", file, "[project]", []))]
    extras = project.get("optional-dependencies", {})
    if not isinstance(extras, dict):
        raise refused(file, "[project].optional-dependencies", extras, "is not a table")
    for extra in extras:
        for i, v in enumerate(_strings(extras, extra, file, "[project].optional-dependencies", [])):
            requirement(v, file, f"[project].optional-dependencies.{shown(extra, 40)}[{i}]")
    return needs, [] if "dependencies" in dynamic else deps


def toml(path: Path, file: str) -> dict:
    """A submitted TOML file, bounded; BuildFailed in one line whatever its shape."""
    try:
        return tomllib.loads(_bounded(path, file).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as err:
        raise BuildFailed(f"{file}: not TOML ({shown(str(err), 80)})") from None
    except RecursionError:
        raise BuildFailed(f"{file}: nested too deep to read") from None


def _table(table: dict, key: str, file: str) -> dict:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise refused(file, f"[{key}]", value, "is not a table")
    return value


def _strings(table: dict, key: str, file: str, where: str, default: list) -> list:
    value = table.get(key, default)
    if not isinstance(value, list):
        raise refused(file, f"{where}.{shown(key, 40)}", value, "is not a list")
    return value


def conda(path: Path) -> None:
    """environment.yaml: channels by name (CONDA_CHANNELS), dependencies each a conda match spec of a name and a
    version; nothing else (a pip section would run pip online with what it names)."""
    from rexrank.inference.contract import safe_yaml

    file = "environment.yaml"
    try:
        spec = safe_yaml(_bounded(path, file), file)
    except BuildFailed:
        raise
    except InputError as err:
        raise BuildFailed(f"{file}: {err}") from None
    if not isinstance(spec, dict):
        raise BuildFailed(f"{file}: expected a mapping (channels, dependencies)")
    if set(spec) - {"name", "channels", "dependencies"}:
        raise BuildFailed(f"{file}: only name, channels and dependencies are read")
    channels, deps = spec.get("channels") or [], spec.get("dependencies") or []
    for key, value in (("channels", channels), ("dependencies", deps)):
        if not isinstance(value, list):
            raise refused(file, key, value, "is not a list")
    for i, channel in enumerate(channels):
        if channel not in CONDA_CHANNELS:
            raise refused(file, f"channels[{i}]", channel, f"is not one of {', '.join(CONDA_CHANNELS)}")
    for i, entry in enumerate(deps):
        match = CONDA_SPEC.fullmatch(entry) if isinstance(entry, str) and len(entry) <= MAX_ENTRY else None
        if match is None or (match["channel"] and match["channel"] not in CONDA_CHANNELS):
            raise refused(file, f"dependencies[{i}]", entry, "is not a conda package of a name and a version "
                                                             "(no pip section, URL, path or other channel)")
