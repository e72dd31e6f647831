"""A Jupyter kernel for untrusted student code, and a client that survives whatever it does.

The kernel runs inside fresh Linux namespaces (``unshare -m -n -p``), chrooted into a
throw-away root that holds only what Python needs (the system directories, the interpreter,
the venv and the public ``course`` package) plus the submission's own work folder. It runs
as an unprivileged uid (60000 + slot, no passwd entry needed), with resource limits
(address space, processes, CPU time, file size per process; memory and processor cores per
kernel, in cgroups where the machine lets the grader make them), a scrubbed environment and no
network (a new network namespace has only a downed loopback). The repository, the reference
solutions, the hidden checks, the gradebook and the other submissions are simply not in its
file system. Killing the kernel kills its whole pid namespace, so a fork bomb leaves nothing
behind.

:class:`SandboxKernel` executes code with a deadline, tells a timeout from a dead kernel,
restarts a kernel that died or hung, and replays the cells that had run before.
"""

from __future__ import annotations

import fcntl
import functools
import json
import math
import os
import queue
import re
import shlex
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from jupyter_client import KernelManager

SLOT_DIR = Path("/tmp/autograder-sandbox-slots")
N_SLOTS = 64
BASE_UID = 60000
MAX_OUTPUT_CHARS = 20_000  # text kept per cell (streams, text/plain, error messages)
MAX_IMAGE_CHARS = 2_000_000  # base64 image data kept per cell (about 1.5 MB of PNG)
MAX_SUBMISSION_OUTPUT_CHARS = 8_000_000  # all kept outputs of one submission, every kind
# The largest reply of the grader's bridge that the grader decodes (the kernel's side caps its
# replies at 64 MB of data, about 86 million base64 characters, but student code can bypass it).
MAX_PAYLOAD_CHARS = 100_000_000
OUT_OF_TIME = "the submission ran out of time (the limit for a whole submission) and was stopped"


@dataclass(frozen=True)
class Limits:
    """Per-kernel limits. ``cell_timeout`` is wall-clock seconds per cell or per graded call."""

    cell_timeout: float = 30.0
    memory_mb: int = 2048  # address space (RLIMIT_AS) of every process in the kernel
    kernel_memory_mb: int = 4096  # all the kernel's processes together (a memory cgroup)
    kernel_cpus: float = 1.0  # processor cores all the kernel's processes share (a cpu cgroup)
    reply_mb: int = 128  # the largest message the grader receives from the kernel (ZMQ drops more)
    processes: int = 64  # RLIMIT_NPROC of the sandbox uid (threads count too)
    cpu_seconds: int = 600  # RLIMIT_CPU, a backstop against CPU burnt outside any deadline
    file_mb: int = 64  # RLIMIT_FSIZE: the largest file the kernel may write
    tmpfs_mb: int = 128  # size of the private root (its /tmp, home and work folder), in bytes
    files: int = 2000  # files and folders the kernel may create in its private root
    submission_timeout: float = (
        600.0  # wall-clock seconds for a whole submission, restarts included
    )
    startup_timeout: float = 60.0
    record_timeout: float = 120.0  # seconds to record one submission and render its feedback
    grader_memory_mb: int = 4096  # heap of each grader process that reads a submission's output


def set_memory_bound(megabytes: int) -> None:
    """Bound this process's heap and private mappings (RLIMIT_DATA) to what it holds now plus
    ``megabytes``: a submission that makes the grader allocate more gets a MemoryError in this
    process, not the machine's memory."""
    import resource

    held = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                held = int(line.split()[1]) << 10  # kB
    limit = held + (megabytes << 20)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


PR_SET_PDEATHSIG = 1  # prctl(2)
# The kernel's launcher gets SIGKILL when the process that started it dies, however it dies
# (setpriv, util-linux 2.33 on); unshare's --kill-child then takes the kernel's whole pid
# namespace with it.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL")


def die_with_parent(parent: int) -> None:
    """Have Linux send this process SIGKILL when its parent dies (``kill -9`` included), and
    exit at once if ``parent`` already has: a grading worker must not outlive its command."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


class SandboxUnavailable(RuntimeError):
    """This machine cannot build the sandbox (not root, no unshare, ...)."""


ROOT, ROOTLESS = "root", "rootless"
# The namespaces of every kernel (root mode); rootless mode first becomes root of a user namespace.
_NAMESPACES = [
    "--mount",
    "--net",
    "--pid",
    "--ipc",  # SysV shared memory dies with the kernel and is no channel between kernels
    "--uts",
    "--fork",
    "--kill-child",
    "--propagation",
    "private",
]
_OUTER_NAMESPACES = ["--user", "--map-root-user", *_NAMESPACES]
_TOOLS = {
    ROOT: ("unshare", "chroot", "setpriv", "prlimit", "mount"),  # setpriv: also DIE_WITH_PARENT
    ROOTLESS: ("unshare", "setpriv", "prlimit", "mount", "hostname"),
}
# Kernel settings that switch unprivileged user namespaces off, and the value that does it.
_USERNS_SWITCHES = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone = 0"),
    ("/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces = 0"),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor)",
    ),
)
_MODE: list[str] = []  # the mode found for this process's user, once


def sandbox_mode() -> str:
    """How this process builds sandboxes: :data:`ROOT` or :data:`ROOTLESS`.

    As root, the kernel runs under a sandbox uid of its own (chroot, setuid). As an ordinary
    user, the same sandbox is built inside user namespaces: an outer one where the user is root
    over its own mount, network, pid, IPC and UTS namespaces (to mount the private root), and an
    inner one where the kernel is an ordinary uid with no capability. Neither: SandboxUnavailable,
    naming what is missing. Never unsandboxed.
    """
    if _MODE:
        return _MODE[0]
    mode = ROOT if os.geteuid() == 0 else ROOTLESS
    for tool in _TOOLS[mode]:
        if shutil.which(tool) is None:
            raise SandboxUnavailable(f"the sandbox needs `{tool}` (util-linux / coreutils)")
    if mode == ROOTLESS:
        _probe_user_namespaces()
    _MODE.append(mode)
    return mode


def _probe_user_namespaces() -> None:
    """Build a minimal rootless sandbox once (tmpfs, proc, hostname, an inner user namespace)."""
    import subprocess
    import tempfile

    script = (
        'set -e; mount -t tmpfs -o size=1m tmpfs "$1"; mkdir "$1/proc"; '
        'mount -t proc proc "$1/proc"; hostname probe; '
        f"unshare --user --map-user={BASE_UID} --map-group={BASE_UID} true"
    )
    with tempfile.TemporaryDirectory() as folder:
        try:
            result = subprocess.run(
                ["unshare", *_OUTER_NAMESPACES, "/bin/sh", "-c", script, "probe", folder],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            result = None
            said = str(error)
        if result is not None and result.returncode == 0:
            return
        if result is not None:
            said = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
    off = []
    for path, value, name in _USERNS_SWITCHES:
        try:
            if Path(path).read_text().strip() == value:
                off.append(name)
        except OSError:
            continue
    why = f"this machine has {' and '.join(off)}" if off else f"`unshare` said: {said[:300]}"
    raise SandboxUnavailable(
        "the sandbox needs root or unprivileged user namespaces, and this user "
        f"(uid {os.geteuid()}) has neither: {why}. Run the command as root, or let ordinary "
        "users create user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
        "user.max_user_namespaces > 0, kernel.apparmor_restrict_unprivileged_userns=0)"
    )


def check_sandbox_available() -> str:
    """The sandbox mode (see :func:`sandbox_mode`), or SandboxUnavailable saying what is missing."""
    return sandbox_mode()


class MemoryCgroup:
    """A memory cgroup for one kernel, under this process's own (cgroup v2 or v1).

    Everything the kernel's processes use together (their memory and their tmpfs) is capped at
    ``limit_mb``, swap included; past it the kernel's OOM killer stops the largest of them, which
    :meth:`oom_kills` counts. Made under the grader's own cgroup, so the limits the grader itself
    runs under still hold.
    """

    def __init__(self, parent: Path, version: int, limit_mb: int, cpus: float | None = None):
        self.version = version
        self.path = parent / f"kernel-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        limit = str(limit_mb * 1024 * 1024)
        try:
            if version == 2:
                (self.path / "memory.max").write_text(limit)
                if (self.path / "memory.swap.max").exists():
                    (self.path / "memory.swap.max").write_text("0")
                if cpus is not None:  # one cgroup holds a process in v2: its cpu cap too
                    (self.path / "cpu.max").write_text(_cpu_max(cpus))
            else:
                (self.path / "memory.limit_in_bytes").write_text(limit)
                if (self.path / "memory.memsw.limit_in_bytes").exists():
                    (self.path / "memory.memsw.limit_in_bytes").write_text(limit)
        except OSError:
            self.remove()
            raise

    def oom_kills(self) -> int:
        """Processes the kernel's OOM killer stopped in this cgroup."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        _remove_cgroup(self.path)


def _remove_cgroup(path: Path) -> None:
    """Remove a kernel's cgroup once its processes are gone (a killed pid namespace takes a
    moment)."""
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def _cgroup_parent(controller: str = "memory") -> tuple[Path, int] | str:
    """(folder of this process's cgroup for ``controller``, version), or why there is none to
    write."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as error:
        return f"cannot read this process's cgroups ({error.strerror})"
    for line in own:
        number, controllers, path = line.split(":", 2)
        version = 2 if number == "0" and controllers == "" else 1
        if version == 1 and controller not in controllers.split(","):
            continue
        for mount in mounts:
            fields, _, rest = mount.partition(" - ")
            fstype, _, options = rest.split(" ")[:3] if rest.count(" ") >= 2 else ("", "", "")
            root, point = fields.split(" ")[3:5]
            wanted = "cgroup2" if version == 2 else "cgroup"
            if fstype != wanted or (version == 1 and controller not in options.split(",")):
                continue
            relative = path if root == "/" else path[len(root) :] if path.startswith(root) else ""
            folder = Path(point + relative.rstrip("/"))
            if version == 2:
                controls = folder / "cgroup.subtree_control"
                try:
                    if controller not in controls.read_text().split():
                        continue  # not delegated to us: a child could not limit it
                except OSError:
                    continue
            if os.access(folder, os.W_OK):
                return folder, version
    return (
        f"no {controller} cgroup this user may write to (cgroup v2 needs the {controller}"
        " controller delegated)"
    )


CPU_PERIOD_US = 100_000  # the scheduler's period for a cpu cap; the cap is a share of each


def _cpu_max(cpus: float) -> str:
    return f"{max(1000, round(cpus * CPU_PERIOD_US))} {CPU_PERIOD_US}"


class CpuCgroup:
    """A cgroup v1 ``cpu`` cgroup for one kernel, under this process's own: all the kernel's
    processes together get at most ``cpus`` cores (CFS bandwidth control). Under cgroup v2 the
    cap is written in the kernel's :class:`MemoryCgroup` instead (a process is in one cgroup).

    Without it, a kernel that starts many busy processes (a fork bomb) takes every core until
    its deadline, and the other kernels of the batch, slowed, may time out on honest cells.
    """

    def __init__(self, parent: Path, cpus: float):
        self.path = parent / f"kernel-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        quota, period = _cpu_max(cpus).split()
        try:
            (self.path / "cpu.cfs_period_us").write_text(period)
            (self.path / "cpu.cfs_quota_us").write_text(quota)
        except OSError:
            self.remove()
            raise

    def remove(self) -> None:
        _remove_cgroup(self.path)


@functools.cache
def memory_cgroups() -> tuple[Path, int] | str:
    """Where kernels' memory cgroups go, tried once (a cgroup made and removed); or why not."""
    found = _cgroup_parent()
    if not isinstance(found, str):
        try:
            MemoryCgroup(found[0], found[1], 64).remove()
        except OSError as error:
            found = f"cannot make a memory cgroup in {found[0]} ({error.strerror})"
    return found


@functools.cache
def cpu_cgroups() -> tuple[Path, int] | str:
    """Where kernels' cpu caps go, tried once: (folder, 1) for a cgroup v1 ``cpu`` hierarchy,
    (folder, 2) when the memory cgroups of :func:`memory_cgroups` take ``cpu.max`` too; or why
    there is none."""
    found = _cgroup_parent("cpu")
    memory = memory_cgroups()
    if not isinstance(found, str) and found[1] == 2:
        if isinstance(memory, str) or memory[0] != found[0]:
            found = "cgroup v2 delegates cpu where the kernels' memory cgroups are not"
    if not isinstance(found, str):
        try:
            if found[1] == 1:
                CpuCgroup(found[0], 1.0).remove()
            else:
                MemoryCgroup(found[0], 2, 64, cpus=1.0).remove()
        except OSError as error:
            found = f"cannot make a cpu cgroup in {found[0]} ({error.strerror})"
    return found


def cpu_cap(limits: Limits) -> str:
    """How the kernels' processor time is limited, in words (the TA's summary, state.json)."""
    found = cpu_cgroups()
    if isinstance(found, str):
        return f"no cap per kernel: {found}"
    return f"{limits.kernel_cpus:g} core(s) per kernel, all its processes together (cgroup v{found[1]})"


def memory_cap(limits: Limits) -> str:
    """How the kernels' memory is limited, in words (for the TA's summary and state.json)."""
    found = memory_cgroups()
    per_process = f"{limits.memory_mb} MB of address space per process"
    if isinstance(found, str):
        return f"{per_process} only: {found}"
    return f"{limits.kernel_memory_mb} MB per kernel (cgroup v{found[1]}), {per_process}"


def slot_dir() -> Path:
    """The lock files of the sandbox slots: one folder for root, one per ordinary user."""
    if os.geteuid() == 0:
        return SLOT_DIR
    return SLOT_DIR.with_name(f"{SLOT_DIR.name}-{os.geteuid()}")


class Slot:
    """An exclusive sandbox uid, held through an flock that dies with the process."""

    def __init__(self) -> None:
        folder = slot_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for index in range(N_SLOTS):
            handle = open(folder / f"{index}.lock", "w")  # noqa: SIM115 - held until release
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            self.index, self._handle = index, handle
            self.uid = BASE_UID + index
            return
        raise SandboxUnavailable(f"all {N_SLOTS} sandbox slots are busy")

    def release(self) -> None:
        self._handle.close()


def _readable_roots() -> list[str]:
    """Folders the kernel needs, read-only: system dirs, the interpreter, venv, ``course``."""
    import course

    system = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc"]  # bound as named
    python = [sys.base_prefix, sys.prefix, str(Path(course.__file__).parent)]
    found = [path for path in system if os.path.exists(path)]
    for root in python:  # the venv (sys.prefix) is bound alone, never the checkout around it
        path = os.path.realpath(root)
        if os.path.exists(path) and not any(path == f or path.startswith(f + "/") for f in found):
            found.append(path)
    return found


_OWN_INODES = 256  # the private root's own folders and mount points, beyond the kernel's files
_SOCKETS = 5  # shell, iopub, stdin, control and heartbeat: the ipc sockets a kernel makes

HOME = "/home/student"
WORK = f"{HOME}/work"  # the kernel's working directory: the notebook's folder
RUNTIME = f"{HOME}/.local/share/jupyter/runtime"  # connection file and sockets, as in Jupyter
HOSTNAME = "jupyter"
USER = "student"


def identity_files(uid: int) -> dict[str, str]:
    """/etc files the kernel sees in place of the host's: its user, its hostname, nothing else."""
    return {
        "passwd": f"root:x:0:0:root:/root:/bin/sh\n{USER}:x:{uid}:{uid}::{HOME}:/bin/sh\n",
        "group": f"root:x:0:\n{USER}:x:{uid}:\n",
        "hostname": f"{HOSTNAME}\n",
        "hosts": f"127.0.0.1 localhost\n127.0.1.1 {HOSTNAME}\n::1 localhost\n",
    }


def launcher_script(
    root: Path,
    work: Path,
    runtime: Path,
    etc: Path,
    limits: Limits,
    uid: int,
    connection: str,
    mode: str = ROOT,
    cgroups: tuple[Path, ...] = (),
) -> str:
    """The shell script that builds the private root and execs the kernel inside it.

    Host folders appear under neutral names: ``work`` (the submission's folder) at
    :data:`WORK`, ``runtime`` (connection file, sockets) at :data:`RUNTIME`; the files of
    ``etc`` replace /etc/passwd, group, hostname and hosts; the hostname is :data:`HOSTNAME`.
    Nothing the kernel can read (paths, command line, environment, names) says "grading".

    In :data:`ROOT` mode the script runs as real root in new namespaces, and the kernel gets
    ``uid`` by setuid. In :data:`ROOTLESS` mode it runs as root of a new user namespace (the TA's
    uid outside); the kernel then enters an inner user namespace where it is ``uid`` (the TA's
    uid outside, as every file it writes), chrooted, with no capability: it can neither mount,
    chroot again nor create user namespaces (the kernel refuses them inside a chroot).
    """
    q = shlex.quote
    tool = {name: q(shutil.which(name) or name) for name in ("chroot", "prlimit", "unshare")}
    setpriv = q(shutil.which("setpriv") or "setpriv")
    hostname = (
        f"echo {HOSTNAME} > /proc/sys/kernel/hostname"  # this UTS namespace's own
        if mode == ROOT
        else f"hostname {HOSTNAME}"  # /proc/sys belongs to the host's user namespace
    )
    lines = [
        "set -e",
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        f"R={q(str(root))}",
        hostname,
    ]
    for cgroup in cgroups:  # this shell and every process of the kernel, from now on
        lines.append(f"echo $$ > {q(str(cgroup / 'cgroup.procs'))}")
    lines += [
        # every folder the kernel may write to is in this tmpfs: bytes and files are capped
        f"mount -t tmpfs -o size={limits.tmpfs_mb}m,nr_inodes={limits.files + _OWN_INODES},"
        f'mode=755 tmpfs "$R"',
    ]
    for path in _readable_roots():
        lines += [
            f'mkdir -p "$R"{q(path)}',
            f'mount --rbind {q(path)} "$R"{q(path)}',
            f'mount -o remount,bind,ro,nosuid "$R"{q(path)}',
        ]
    for name in identity_files(uid):
        lines += [
            f'if [ -e "$R/etc/{name}" ]; then mount --bind {q(str(etc / name))} "$R/etc/{name}"; fi',
        ]
    lines += [
        f'mkdir -p "$R{WORK}" "$R{RUNTIME}" "$R/proc" "$R/dev" "$R/tmp"',
        f'cp -R {q(str(work))}/. "$R{WORK}/"',  # a copy: the work folder is in the tmpfs
    ]
    if mode == ROOT:
        lines.append(f'chown -R {uid}:{uid} "$R{HOME}"')
    lines += [
        # the only host folder it may write to, until its sockets are made (see below)
        f'mount --bind {q(str(runtime))} "$R{RUNTIME}"',
        'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
        'for d in null zero full random urandom tty; do touch "$R/dev/$d"; '
        'mount --bind "/dev/$d" "$R/dev/$d"; done',
        'chmod 1777 "$R/tmp"',
    ]
    rlimits = (
        f"{tool['prlimit']} --as={limits.memory_mb * 1024 * 1024} --nproc={limits.processes}"
        f" --cpu={limits.cpu_seconds} --fsize={limits.file_mb * 1024 * 1024} --core=0"
    )
    kernel = f"{q(sys.executable)} -m ipykernel_launcher -f {q(f'{RUNTIME}/{connection}')}"
    if mode == ROOT:
        # coreutils chroot changes directory to the new root: no handle to the old root stays
        start = (
            # a cgroup namespace of its own: /proc/self/cgroup names no host cgroup
            f'{tool["unshare"]} --cgroup {tool["chroot"]} "$R" /bin/sh -c "cd {WORK} && exec {rlimits}'
            f" {setpriv} --reuid={uid} --regid={uid} --clear-groups --no-new-privs"
            f' --inh-caps=-all --bounding-set=-all {kernel}"'
        )
    else:
        # unshare enters the inner user namespace, chroots and changes directory before it
        # execs: the kernel's uid is not 0 there, so exec leaves it no capability at all
        lines.append(f"export PWD={WORK}")  # not the host folder the script started in
        start = (
            f"{tool['unshare']} --user --map-user={uid} --map-group={uid}"
            f' --root="$R" --wd={WORK} {rlimits} {setpriv} --no-new-privs --inh-caps=-all'
            f" {kernel}"
        )
    # This shell stays as the pid namespace's init (its command line is `/bin/sh -s`, the script
    # comes on stdin): once the kernel has made its sockets, the runtime folder becomes
    # read-only for it, so it can store nothing on the host.
    lines += [
        # ipykernel stops when its parent is pid 1 and it was told its parent's pid: it is not
        # told (the grader's end of the kernel is watched by unshare's --kill-child instead)
        "unset JPY_PARENT_PID",
        f"{start} < /dev/null > /dev/null 2>&1 &",  # nothing of it on the TA's terminal
        "k=$! i=0",
        f'while [ "$(ls "$R{RUNTIME}" | grep -c "^ipc-")" -lt {_SOCKETS} ] && kill -0 $k'
        f" 2>/dev/null && [ $i -lt {int(limits.startup_timeout * 20)} ]; do",
        "  sleep 0.05; i=$((i+1))",
        "done",
        f'mount -o remount,bind,ro,nosuid,nodev,noexec "$R{RUNTIME}"',
        "wait $k",
    ]
    return "\n".join(lines)


def kernel_environment() -> dict[str, str]:
    """What the kernel sees in os.environ: nothing that says who runs it or why."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "USER": USER,
        "LOGNAME": USER,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "MPLBACKEND": "agg",
        "MPLCONFIGDIR": "/tmp",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")


def _displayable(mimetype: str, value: object) -> bool:
    """Only text and base64 PNG outputs are kept: no HTML, JavaScript, SVG or markdown from the
    kernel reaches the notebook a TA or a student opens (see autograder/platform/markup.py)."""
    if mimetype == "text/plain":
        return isinstance(value, str) and bool(value)
    return mimetype == "image/png" and isinstance(value, str) and bool(_BASE64.match(value))


class _SandboxManager(KernelManager):
    """A KernelManager whose kernel command is the sandbox launcher."""

    sandbox_argv: list[str] = []

    def format_kernel_cmd(self, extra_arguments=None):  # noqa: D102 - see KernelManager
        return list(self.sandbox_argv)


@dataclass
class Outcome:
    """What one execution produced."""

    status: str  # "ok", "error", "timeout", "died"
    outputs: list[dict] = field(default_factory=list)  # nbformat outputs (stream / error / display)
    ename: str = ""
    evalue: str = ""
    payloads: list[str] = field(default_factory=list)  # data of the grader's private mimetype
    oversized: int = 0  # payloads of that mimetype dropped for being over MAX_PAYLOAD_CHARS
    refused: int = 0  # messages over Limits.reply_mb, dropped by ZMQ unread
    trimmed: int = 0  # outputs cut or dropped for the per-cell or per-submission caps
    seconds: float = 0.0


class SandboxKernel:
    """One sandboxed kernel for one submission; restartable, always cleaned up by :meth:`close`."""

    def __init__(self, scratch: Path, limits: Limits, files: dict[str, bytes] | None = None):
        self.mode = check_sandbox_available()
        self.limits = limits
        self.slot = Slot()
        self.scratch = scratch
        self.files = files or {}
        self.history: list[str] = []  # cells that ran to completion, replayed after a restart
        self.restarts = 0
        self.deadline = math.inf  # time.monotonic() after which nothing more runs (see judge)
        self.cgroup: MemoryCgroup | None = None
        self.cpu_cgroup: CpuCgroup | None = None  # cgroup v1 only (see CpuCgroup)
        self.oom_kills = 0  # processes stopped for the kernel's memory cap, over all its restarts
        self.km: _SandboxManager | None = None
        self.kc = None
        self.output_left = MAX_SUBMISSION_OUTPUT_CHARS  # what may still be kept, all cells
        self._start()

    # -- life cycle ---------------------------------------------------------------------------

    def _start(self) -> None:
        run = self.scratch / f"run-{uuid.uuid4().hex[:8]}"
        work, runtime, etc, root = run / "work", run / "runtime", run / "etc", run / "root"
        for folder in (work, runtime, etc, root):
            folder.mkdir(parents=True)
        for name, data in self.files.items():
            (work / name).write_bytes(data)
        for name, text in identity_files(self.slot.uid).items():
            (etc / name).write_text(text)
        if self.mode == ROOT:  # rootless: the TA's own files are the kernel's uid's inside
            for path in [work, runtime, *work.iterdir()]:
                os.chown(path, self.slot.uid, self.slot.uid)
        os.chmod(run, 0o755)
        os.chmod(self.scratch, 0o755)
        self._run = run
        # The grader's connection file names the sockets by their host path; the kernel gets a
        # copy naming them where it sees them, at a path like any Jupyter kernel's.
        # The grader's sockets refuse any message over reply_mb: ZMQ drops the connection before
        # reading it (and reconnects); a monitor tells us that it happened.
        context = zmq.Context()
        context.setsockopt(zmq.MAXMSGSIZE, self.limits.reply_mb * 2**20)
        self._context = context
        km = _SandboxManager(transport="ipc", ip=str(runtime / "ipc"), context=context)
        km.connection_file = str(run / "connection.json")
        km.session.username = USER
        km.write_connection_file()
        connection = f"kernel-{uuid.uuid4()}.json"
        info = json.loads(Path(km.connection_file).read_text())
        info["ip"] = f"{RUNTIME}/ipc"
        (runtime / connection).write_text(json.dumps(info))
        if self.mode == ROOT:
            # the kernel (another uid) must read its connection file; it holds only its own key
            os.chown(runtime / connection, self.slot.uid, self.slot.uid)
        where = memory_cgroups() if self.mode == ROOT else "rootless"
        cpu = cpu_cgroups() if self.mode == ROOT else "rootless"
        if not isinstance(where, str):
            cpus = self.limits.kernel_cpus if cpu == (where[0], 2) else None
            self.cgroup = MemoryCgroup(where[0], where[1], self.limits.kernel_memory_mb, cpus)
        if not isinstance(cpu, str) and cpu[1] == 1:
            self.cpu_cgroup = CpuCgroup(cpu[0], self.limits.kernel_cpus)
        cgroups = tuple(c.path for c in (self.cgroup, self.cpu_cgroup) if c is not None)
        script = launcher_script(
            root,
            work,
            runtime,
            etc,
            self.limits,
            self.slot.uid,
            connection,
            self.mode,
            cgroups,
        )
        namespaces = _NAMESPACES if self.mode == ROOT else _OUTER_NAMESPACES
        (run / "start.sh").write_text(script)
        start = f"exec /bin/sh -s < {shlex.quote(str(run / 'start.sh'))}"
        km.sandbox_argv = [*DIE_WITH_PARENT, "unshare", *namespaces, "/bin/sh", "-c", start]
        km.start_kernel(env=kernel_environment(), cwd=str(work))
        kc = km.client(context=context)
        kc.start_channels()
        self._monitors = [
            channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            for channel in (kc.iopub_channel, kc.shell_channel)
        ]
        try:
            kc.wait_for_ready(timeout=self.limits.startup_timeout)
        except RuntimeError:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            raise
        self.km, self.kc = km, kc

    def _stop(self) -> None:
        for monitor in getattr(self, "_monitors", []):
            monitor.close(linger=0)
        self._monitors = []
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - already dead is fine
                pass
            try:
                self.km.cleanup_resources()
            except Exception:  # noqa: BLE001
                pass
        self.km = self.kc = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.oom_kills += self.cgroup.oom_kills()
            self.cgroup = None
        if self.cpu_cgroup is not None:
            self.cpu_cgroup.remove()
            self.cpu_cgroup = None
        if getattr(self, "_context", None) is not None:
            self._context.destroy(linger=0)
            self._context = None
        if getattr(self, "_run", None) is not None:
            shutil.rmtree(self._run, ignore_errors=True)

    def memory_stops(self) -> int:
        """Processes stopped so far for using more than the kernel's memory cap together."""
        return self.oom_kills + (self.cgroup.oom_kills() if self.cgroup is not None else 0)

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def restart(self) -> bool:
        """Start a fresh kernel and replay the cells that completed; False if that fails."""
        self._stop()
        if self.time_left() <= 0:
            return False  # the submission's time is up: nothing more will run
        self.restarts += 1
        try:
            self._start()
        except Exception:  # noqa: BLE001 - a kernel that cannot start is reported by the caller
            return False
        for code in self.history:
            outcome = self._execute(code, self.limits.cell_timeout)
            if outcome.status in ("timeout", "died") or outcome.refused:
                return False
        return True

    def close(self) -> None:
        self._stop()
        self.slot.release()

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    # -- execution ----------------------------------------------------------------------------

    def out_of_time(self) -> Outcome:
        return Outcome("timeout", ename="TimeoutError", evalue=OUT_OF_TIME)

    def run_cell(self, code: str) -> Outcome:
        """Run a student cell; after a timeout or a death, restart and replay the earlier cells."""
        if self.time_left() <= 0:
            return self.out_of_time()
        if not self.alive() and not self.restart():
            return Outcome("died", ename="DeadKernelError", evalue="the kernel could not restart")
        outcome = self._execute(code, self.limits.cell_timeout)
        # after a refused message the connection comes back too late to trust: a fresh kernel,
        # without that cell (replayed, it would send its message again)
        if outcome.status in ("ok", "error") and not outcome.refused:
            self.history.append(code)
        else:
            self.restart()
        return outcome

    def run_hidden(self, code: str, timeout: float, mimetype: str) -> Outcome:
        """Run grader code (not kept in the history); collect the payloads of ``mimetype``."""
        if self.time_left() <= 0:
            return self.out_of_time()
        if not self.alive() and not self.restart():
            return Outcome("died", ename="DeadKernelError", evalue="the kernel could not restart")
        outcome = self._execute(code, timeout, mimetype=mimetype, keep_outputs=False)
        if outcome.status in ("timeout", "died") or outcome.refused:
            self.restart()
        return outcome

    def _dropped_connections(self) -> int:
        count = 0
        for monitor in self._monitors:
            while monitor.poll(0):
                monitor.recv_multipart()
                count += 1
        return count

    def _execute(
        self, code: str, timeout: float, mimetype: str | None = None, keep_outputs: bool = True
    ) -> Outcome:
        kc, km = self.kc, self.km
        assert kc is not None and km is not None
        started = time.monotonic()
        deadline = min(started + timeout, self.deadline)
        msg_id = kc.execute(code, store_history=False, allow_stdin=False)
        outcome = Outcome("ok")
        chars = images = 0  # kept for this cell: text, and base64 image data
        reply_seen = idle_seen = False
        self._dropped_connections()  # events of an earlier execution (seen after it ended)
        while not (reply_seen and idle_seen):
            # a dropped connection means a message over the cap (a dead kernel is told apart)
            outcome.refused += self._dropped_connections()
            if outcome.refused and reply_seen:
                break  # the idle status may have gone with the refused message's connection
            if time.monotonic() > deadline:
                outcome.status = "timeout"
                outcome.ename = "TimeoutError"
                outcome.evalue = f"the cell ran longer than {timeout:g} s and was stopped"
                if self.time_left() <= 0:
                    outcome.evalue = OUT_OF_TIME
                break
            if not km.is_alive():
                outcome.status = "died"
                outcome.ename = "DeadKernelError"
                outcome.evalue = "the kernel died (it exited, crashed or hit a resource limit)"
                break
            if not reply_seen:
                try:  # block on the shell channel only once the outputs are all in
                    reply = kc.get_shell_msg(timeout=0.05 if idle_seen else 0)
                    if reply["parent_header"].get("msg_id") == msg_id:
                        reply_seen = True
                except queue.Empty:
                    pass
            if idle_seen:
                continue
            try:
                msg = kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                idle_seen = True
            elif kind == "error":
                outcome.status = "error"
                outcome.ename = str(content.get("ename", ""))[:200]
                outcome.evalue = str(content.get("evalue", ""))[:2000]
                if keep_outputs:
                    outcome.outputs.append(
                        {
                            "output_type": "error",
                            "ename": outcome.ename,
                            "evalue": outcome.evalue,
                            "traceback": [str(line)[:2000] for line in content["traceback"][:50]],
                        }
                    )
            elif kind in ("display_data", "execute_result"):
                data = content.get("data", {})
                if mimetype is not None and mimetype in data:
                    payload = data[mimetype]
                    if isinstance(payload, str) and len(payload) <= MAX_PAYLOAD_CHARS:
                        outcome.payloads.append(payload)
                    else:
                        outcome.oversized += 1
                elif keep_outputs:
                    kept = {k: v for k, v in data.items() if _displayable(k, v)}
                    image = kept.get("image/png", "")
                    if image and len(image) > min(MAX_IMAGE_CHARS - images, self.output_left):
                        del kept["image/png"]  # over the caps: dropped whole, not cut
                        outcome.trimmed += 1
                    else:
                        images += len(image)
                        self.output_left -= len(image)
                    if "text/plain" in kept:
                        room = min(MAX_OUTPUT_CHARS - chars, self.output_left)
                        text = kept["text/plain"]
                        if len(text) > room:
                            outcome.trimmed += 1
                            kept["text/plain"] = text[: max(room, 0)]
                        chars += len(kept["text/plain"])
                        self.output_left -= len(kept["text/plain"])
                        if not kept["text/plain"]:
                            del kept["text/plain"]
                    if kept:
                        outcome.outputs.append(
                            {"output_type": "display_data", "data": kept, "metadata": {}}
                        )
            elif kind == "stream" and keep_outputs:
                whole = str(content.get("text", ""))
                text = whole[: max(min(MAX_OUTPUT_CHARS - chars, self.output_left), 0)]
                outcome.trimmed += len(text) < len(whole)
                chars += len(text)
                self.output_left -= len(text)
                if not text:
                    continue
                name = "stderr" if content.get("name") == "stderr" else "stdout"
                if outcome.outputs and outcome.outputs[-1].get("name") == name:
                    outcome.outputs[-1]["text"] += text
                else:
                    outcome.outputs.append({"output_type": "stream", "name": name, "text": text})
        outcome.seconds = time.monotonic() - started
        outcome.refused += self._dropped_connections()
        if outcome.refused and keep_outputs:
            outcome.outputs.append(
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": f"[an output over {self.limits.reply_mb} MB was dropped]\n",
                }
            )
        if outcome.trimmed and keep_outputs:
            outcome.outputs.append(
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": f"[{outcome.trimmed} output(s) trimmed: the grader keeps"
                    f" {MAX_OUTPUT_CHARS:,} characters of text and {MAX_IMAGE_CHARS:,} of"
                    f" images per cell, {MAX_SUBMISSION_OUTPUT_CHARS:,} in all]\n",
                }
            )
        if outcome.status in ("timeout", "died") and keep_outputs:
            outcome.outputs.append(
                {
                    "output_type": "error",
                    "ename": outcome.ename,
                    "evalue": outcome.evalue,
                    "traceback": [f"{outcome.ename}: {outcome.evalue}"],
                }
            )
        return outcome
