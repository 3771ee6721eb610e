"""The sandbox a submitted script runs in: bubblewrap (Debian's `bubblewrap`, the sandbox Flatpak is built on).

What the script sees: the system's `/usr` and a few files of `/etc`, read-only; the job's own Python (its prefixes
and its `sys.path`, as the job's interpreter reports them: never a submitted environment's), read-only; the
submission's built environment at /env, read-only (`rexrank.inference.environment`: what its `.pth` files do happens
in here only); its code at `/submission`, the input JSON at `/input`, a fresh tree of exactly the split's images at
`/images` and the pinned weights' Hub cache at `/weights`, all read-only; `/output`, the one folder on disk it may
write, holding its save file and a scratch copy of its code tree as its working directory (scripts write relative
paths); `/tmp` and `/dev/shm`, each a tmpfs of bounded size; `/` and `/dev` read-only, `/dev` holding null, zero,
random and tty (and the one GPU it is given); its own PID, IPC, UTS, cgroup, user and network namespaces: no network
at all, its uid `nobody`, no capabilities. Its environment is emptied and set anew: no token of the maintainers',
Hugging Face offline. bubblewrap reads its arguments from a pipe, so the sandbox's PID 1 shows no host path in
`/proc/1/cmdline`. A wall-clock limit, a bound on what it writes (each file by RLIMIT_FSIZE, the folder by a
watchdog) and, where the kernel allows, a control group bounding its processes and memory (`rexrank.inference.limits`)
end it, with everything it started.

Before any submitted code runs, `check` runs a probe in the same sandbox and refuses to go on unless every one of
those walls holds: no connection to a listener on this machine's loopback, nothing written to the images, the code,
`/` or `/dev`, no variable of the outer environment, no file outside the sandbox's binds, no host path in PID 1's
command line. Where bubblewrap is missing or may not make namespaces, the run is refused: submitted code never runs
unsandboxed. The fetch of a submission's wheels (rexrank.inference.environment) runs in the same sandbox with
`network=True`: the network is its purpose, and its probe must find every other wall up.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rexrank.errors import InputError
from rexrank.inference import limits

NOBODY = 65534
ENVIRONMENT = Path("/env")  # where a submission's built environment is, when it is built and when it runs
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "passwd", "group",
       "nsswitch.conf", "mime.types", "fonts")
NETWORK_ETC = ("resolv.conf", "hosts", "host.conf", "gai.conf", "ssl", "ca-certificates", "pki")  # a fetch's only
GPU_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
LOG_BYTES = 1024 * 1024  # of the script's stdout and stderr kept; the rest is counted, not kept
WATCH_SECONDS = 0.2
GiB = 1024 ** 3


class SandboxUnavailable(InputError):
    """The sandbox cannot be made here, or one of its walls does not hold: nothing submitted is run."""


@dataclass(frozen=True)
class Outcome:
    returncode: int | None
    seconds: float
    timed_out: bool = False
    wrote_too_much: bool = False
    log: Path | None = None
    out_of_memory: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.wrote_too_much and not self.out_of_memory

    def why(self, limit: float, bound: int) -> str:
        if self.timed_out:
            return f"ran past its wall-clock limit of {limit:,.0f} s and was stopped"
        if self.wrote_too_much:
            return f"wrote more than {bound:,} bytes and was stopped"
        if self.out_of_memory:
            return "used more memory than its bound and was stopped"
        return f"exited with code {self.returncode}"


@dataclass
class Sandbox:
    code: Path  # the submission's model/ folder
    inputs: Path  # the folder holding the input JSON
    images: Path  # a fresh tree of the split's images (rexrank.inference.runner.image_tree)
    output: Path
    weights: dict[str, Path] = field(default_factory=dict)  # repo id -> its folder in the Hub cache (models--o--n)
    revisions: dict[str, str] = field(default_factory=dict)  # repo id -> pinned commit
    python: Path = field(default_factory=lambda: Path(sys.executable))  # the job's own: trusted
    environment: Path | None = None  # a submission's built environment, bound at /env; never run on the host
    environment_writable: bool = False  # only while it is built
    gpu: int | None = None
    timeout: float = 24 * 3600.0
    max_output_bytes: int = GiB
    tmp_bytes: int = GiB
    shm_bytes: int = GiB
    processes: int = 4096  # tasks (threads count: torch starts one per core and CUDA's own)
    memory_bytes: int | None = field(default_factory=lambda: limits.machine_memory() * 3 // 4)
    env: dict[str, str] = field(default_factory=dict)
    readable: dict[str, Path] = field(default_factory=dict)  # more folders it may read: sandbox path -> host path
    writable: dict[str, Path] = field(default_factory=dict)  # more folders it may write: sandbox path -> host path
    network: bool = False  # the fetch sandbox's only (rexrank.inference.environment): every other wall stays

    # -- what the script sees -------------------------------------------------------------------------------

    def interpreter(self) -> str:
        """The Python the command names, found on the sandbox's PATH: the built environment's (/env/bin first),
        else the job's own. A name, not a path: the command line is the one part of PID 1 the script can read."""
        return "python" if self.environment is not None else self.python.name

    def job_paths(self) -> list[Path]:
        """The job's Python's folders: its prefixes and what its .pth files put on sys.path, as the job's own
        interpreter says (a submitted environment's is never run here: it is bound at /env instead)."""
        probe = subprocess.run([str(self.python), "-I", "-c", "import json, sys; print(json.dumps([sys.prefix, "
                                "sys.base_prefix, *[p for p in sys.path if p]]))"],
                               capture_output=True, text=True, timeout=60, check=False)
        if probe.returncode != 0:
            raise SandboxUnavailable(f"{self.python} does not run: {probe.stderr.strip()[:200]}")
        found: list[Path] = []
        # what argv binds read-only for every script already: a distribution's python3 (its venv's base prefix,
        # its standard library) lives there, and is shown without a second bind
        system = [Path(p).resolve() for p in ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/lib32") if Path(p).is_dir()]
        for entry in json.loads(probe.stdout):
            path = Path(entry).resolve()
            if not path.exists() or any(path == p or p in path.parents for p in (*found, *system)):
                continue
            if len(path.parts) < 3 or path in (Path.home(), Path(tempfile.gettempdir())):
                raise SandboxUnavailable(f"the Python environment puts {path} on its path: the sandbox would show "
                                         "all of it; run with an environment of its own (a venv)")
            found = [p for p in found if path not in p.parents] + [path]
        return found

    def argv(self) -> list[str]:
        """bubblewrap's options, as they go down its --args pipe (the command follows them on its command line)."""
        args = ["--unshare-all", *(["--share-net"] if self.network else []), "--uid", str(NOBODY), "--gid", str(NOBODY),
                "--hostname", "sandbox",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib64", "sbin", "lib32"):
            top = Path("/") / name
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        for name in ETC + (NETWORK_ETC if self.network else ()):
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # the bounded tmpfs mounts first: a bind below one of them (a folder under /tmp) then shows on top of it
        args += ["--dev", "/dev", "--size", str(self.shm_bytes), "--tmpfs", "/dev/shm", "--proc", "/proc",
                 "--size", str(self.tmp_bytes), "--tmpfs", "/tmp"]
        for path in self.job_paths():
            args += ["--ro-bind", str(path), str(path)]
        if self.environment is not None:
            args += ["--bind" if self.environment_writable else "--ro-bind", str(self.environment), str(ENVIRONMENT)]
        args += ["--ro-bind", str(self.code), "/submission", "--ro-bind", str(self.inputs), "/input",
                 "--ro-bind", str(self.images), "/images", "--bind", str(self.output), "/output"]
        for inside, path in self.readable.items():
            args += ["--ro-bind", str(path), inside]
        for inside, path in self.writable.items():
            args += ["--bind", str(path), inside]
        for repo, folder in self.weights.items():
            args += ["--ro-bind", str(folder), f"/weights/hub/{folder.name}"]
            if repo in self.revisions:  # /weights/ORG/NAME: the pinned snapshot, for scripts that take a path
                args += ["--symlink", f"/weights/hub/{folder.name}/snapshots/{self.revisions[repo]}",
                         f"/weights/{repo}"]
        if self.gpu is not None:
            args += ["--ro-bind-try", "/sys", "/sys", "--dev-bind-try", f"/dev/nvidia{self.gpu}",
                     f"/dev/nvidia{self.gpu}"]
            for name in GPU_DEVICES:
                args += ["--dev-bind-try", f"/dev/{name}", f"/dev/{name}"]
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]  # writable: /output, /tmp, /dev/shm
        for key, value in self.variables().items():
            args += ["--setenv", key, value]
        return args + ["--chdir", "/output/work"]

    def written(self) -> list[Path]:
        """The host folders it may write, bounded together by max_output_bytes (/env while it is built included)."""
        return [self.output, *([self.environment] if self.environment_writable and self.environment else []),
                *self.writable.values()]

    def variables(self) -> dict[str, str]:
        """The script's whole environment: nothing of the maintainers', Hugging Face offline."""
        bins = ([str(ENVIRONMENT / "bin")] if self.environment is not None else []) + [str(self.python.parent)]
        path = ":".join((*bins, "/usr/local/bin", "/usr/bin", "/bin"))
        return {"PATH": path, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_CACHE": "/weights/hub",
                "HF_HOME": "/tmp/huggingface", "REXRANK_WEIGHTS": "/weights", "TQDM_MININTERVAL": "10",
                "CUDA_VISIBLE_DEVICES": "" if self.gpu is None else str(self.gpu)} | self.env

    # -- running ----------------------------------------------------------------------------------------------

    def run(self, command: list[str], log: Path | None = None, timeout: float | None = None,
            append: bool = False) -> Outcome:
        """Run `command` in the sandbox; its output (at most LOG_BYTES) to `log` (after what it holds, with
        `append`). Stops it, and all it started, at the wall-clock limit, when /output grows past the bound or when
        its control group runs out of memory."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable("bubblewrap is not installed (apt-get install bubblewrap): submitted code is "
                                     "never run unsandboxed")
        (self.output / "work").mkdir(parents=True, exist_ok=True)
        limit = self.timeout if timeout is None else timeout
        bound = self.max_output_bytes
        group = limits.make_group(self.processes, self.memory_bytes)
        arguments = b"".join(a.encode() + b"\0" for a in self.argv())
        read_end, write_end = os.pipe()

        def start() -> None:  # in the child, before bwrap: inherited by everything in the sandbox
            resource.setrlimit(resource.RLIMIT_FSIZE, (bound, bound))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if group.folders:
                group.join()
            else:  # per real user, and root is exempt: the fallback the module's docstring says
                resource.setrlimit(resource.RLIMIT_NPROC, (self.processes, self.processes))

        started = time.monotonic()
        try:
            # bwrap itself gets an empty environment too: it stays in the sandbox as its PID 1, whose /proc/1/environ
            # the script can read (found by the attacker's test: the maintainers' HF_TOKEN was there)
            process = subprocess.Popen(["bwrap", "--args", str(read_end), "--", *command], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                       preexec_fn=start, env={"PATH": "/usr/bin:/bin"}, executable=bwrap,
                                       pass_fds=(read_end,))
            os.close(read_end)
            threading.Thread(target=_feed, args=(write_end, arguments), daemon=True).start()
            reader = threading.Thread(target=_keep, args=(process.stdout, log, append), daemon=True)
            reader.start()
            timed_out = too_much = False
            walked = 0.0  # when the writable folders may next be measured: a walk of a built /env is not free
            try:
                while process.poll() is None:
                    if time.monotonic() - started > limit:
                        timed_out = True
                    elif time.monotonic() >= walked:
                        began = time.monotonic()
                        too_much = sum(_size(folder) for folder in self.written()) > bound
                        walked = time.monotonic() + 4 * (time.monotonic() - began)
                    if timed_out or too_much:
                        _stop(process)
                        break
                    time.sleep(WATCH_SECONDS)
            except BaseException:
                _stop(process)
                raise
            process.wait()
            reader.join(timeout=10)
            out_of_memory = process.returncode != 0 and group.ran_out_of_memory()
        finally:
            group.remove()
        # a file cut at RLIMIT_FSIZE fails the script's write (Python ignores SIGXFSZ and raises EFBIG): that too is
        # the bound, not the script's own failure
        too_much = too_much or (process.returncode != 0 and max(map(_largest, self.written())) >= bound)
        return Outcome(process.returncode, time.monotonic() - started, timed_out, too_much, log, out_of_memory)

    def check(self) -> None:
        """Run the probe in this sandbox; SandboxUnavailable unless every wall holds (the module's list)."""
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        with tempfile.TemporaryDirectory(prefix="rexrank-probe-") as tmp:
            secret = Path(tmp) / "outside.txt"
            secret.write_text("outside the sandbox\n")
            host = [str(p) for p in (self.code, self.inputs, self.images, self.output, *self.weights.values(),
                                     *([self.environment] if self.environment else []))]
            (self.output / "probe.json").write_text(json.dumps({"port": port, "secret": str(secret), "host": host,
                                                                "given": list(self.variables())}))
            command = [self.python.name, "-I", "-c", PROBE]
            log = Path(tmp) / "probe.log"
            try:
                outcome = self.run(command, log, timeout=120)
            finally:
                listener.close()
            text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
            (self.output / "probe.json").unlink(missing_ok=True)
        found = next((json.loads(line) for line in text.splitlines() if line.startswith('{"probe"')), None)
        if not outcome.ok or found is None:
            raise SandboxUnavailable("the sandbox could not be made here (bubblewrap said: "
                                     f"{text.strip().splitlines()[-1][:200] if text.strip() else 'nothing'}): "
                                     "submitted code is never run unsandboxed; run where user namespaces are "
                                     "allowed (Debian's bubblewrap as root, or a host with unprivileged ones)")
        open_by_design = {"network"} if self.network else set()  # the fetch's: resolving needs the index
        leaks = [f"{wall}: {found[wall]}" for wall in WALLS if found.get(wall) != "held" and wall not in open_by_design]
        if leaks:
            raise SandboxUnavailable("the sandbox does not hold here (" + "; ".join(leaks) + "): nothing submitted "
                                     "is run")


def scratch_copy(code: Path, target: Path) -> None:
    """The script's working directory: a copy of its code tree, so relative paths read and write as in its own
    checkout (the code it runs stays the read-only /submission)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(code, target, symlinks=True, ignore=shutil.ignore_patterns(".*"))


def _feed(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except OSError:  # bwrap died before reading it all: its exit status says why
        pass


def _size(folder: Path) -> int:
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _largest(folder: Path) -> int:
    largest = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                largest = max(largest, os.lstat(os.path.join(root, name)).st_size)
            except OSError:
                continue
    return largest


def _stop(process: subprocess.Popen) -> None:
    """SIGKILL to bwrap's session: bwrap dies, and with it (--die-with-parent) the sandbox's init and all it ran."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _keep(stream, log: Path | None, append: bool = False) -> None:
    kept = 0
    handle = open(log, "ab" if append else "wb") if log else None  # noqa: SIM115 - closed below, after the stream ends
    try:
        for chunk in iter(lambda: stream.read(65536), b""):
            if handle and kept < LOG_BYTES:
                handle.write(chunk[:LOG_BYTES - kept])
                kept += len(chunk)
    finally:
        if handle:
            if kept > LOG_BYTES:
                handle.write(f"\n[rexrank: {kept - LOG_BYTES:,} more bytes of output not kept]\n".encode())
            handle.close()


WALLS = ("network", "images", "code", "root", "environment", "outside", "uid", "cmdline")

PROBE = r'''
import json, os, socket, sys
told = json.load(open("/output/probe.json"))
port, secret, given = told["port"], told["secret"], set(told["given"])
found = {}
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    found["network"] = "reached a listener on the host's loopback"
except OSError:
    found["network"] = "held"
for wall, path in (("images", "/images/.rexrank-probe"), ("code", "/submission/.rexrank-probe"),
                   ("root", "/.rexrank-probe"), ("root", "/dev/.rexrank-probe")):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        found[wall] = path + " writable"
    except OSError:
        found.setdefault(wall, "held")
outer = sorted(k for k in os.environ if k not in given | {"PWD", "LC_CTYPE", "SHLVL", "_"})
try:  # the sandbox's PID 1 (bubblewrap) too: its environment is readable from inside
    with open("/proc/1/environ", "rb") as handle:
        first = [e.split(b"=", 1)[0].decode("utf-8", "replace") for e in handle.read().split(b"\0") if e]
except OSError:
    first = []
outer += sorted(k for k in first if k != "PATH")
found["environment"] = "held" if not outer else "outer variables: " + ", ".join(outer[:5])
found["outside"] = "readable" if os.path.exists(secret) else "held"
found["uid"] = "held" if os.getuid() != 0 else "root"
with open("/proc/1/cmdline", "rb") as handle:  # bubblewrap's own: its options came down a pipe
    shown = handle.read().decode("utf-8", "replace")
found["cmdline"] = "held" if not any(path in shown for path in told["host"]) else "host paths in /proc/1/cmdline"
print(json.dumps({"probe": 1, **found}))
'''
