"""Running a command as an ordinary user, as a TA without root would (for tests run as root).

The user is a bare uid (:data:`UID`, no passwd entry, no groups), set with ``setpriv``; its home
and its output folders are made for it. The repository and the venv must be readable by it:
when a folder above them is closed to others (a clone under ``/root``, say), the command runs
in a private mount namespace where each such folder is replaced by an open tmpfs holding only
the repository and the venv, at their own paths. Nothing on the host changes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
import tempfile
from pathlib import Path

UID = 59000  # below the sandbox's uids (60000 + slot)


def _closed_ancestor(path: Path) -> Path | None:
    """The highest folder above ``path`` that others may not enter, if any."""
    for ancestor in reversed(path.parents):
        if ancestor == Path("/"):
            continue
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None


def needed_paths() -> list[Path]:
    """The repository, the venv and the interpreter: what the grading command reads."""
    from tools.notebooks import REPO

    found = {
        Path(os.path.realpath(p))
        for p in (REPO, sys.prefix, sys.base_prefix, Path(sys.executable).parent)
    }
    return sorted(p for p in found if not any(q != p and q in p.parents for q in found))


# Runs argv[2:] as the uid argv[1] inside a user namespace of its own (the whole uid range
# mapped to itself, so the uid is the same everywhere) whose limit on user namespaces is 0:
# a machine where ordinary users may not create them.
NO_USER_NAMESPACES = """
import ctypes, os, sys
uid, argv = int(sys.argv[1]), sys.argv[2:]
ready, go = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(90)
    os.write(ready[1], b"1")
    os.read(go[0], 1)
    with open("/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execvp(argv[0], argv)
os.read(ready[0], 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as handle:
        handle.write("0 0 4294967295")
os.write(go[1], b"1")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def command(
    argv: list[str], paths: list[Path] | None = None, user_namespaces: bool = True
) -> list[str]:
    """``argv`` as :data:`UID`, with ``paths`` reachable by it (see the module docstring);
    with ``user_namespaces=False``, where it may create no user namespace."""
    q = shlex.quote
    if user_namespaces:
        setpriv = shutil.which("setpriv") or "setpriv"
        as_user = [setpriv, f"--reuid={UID}", f"--regid={UID}", "--clear-groups", *argv]
    else:
        as_user = [sys.executable, "-c", NO_USER_NAMESPACES, str(UID), *argv]
    paths = needed_paths() if paths is None else paths
    closed = {p: a for p in paths if (a := _closed_ancestor(p)) is not None}
    if not closed:
        return as_user
    lines = ["set -e", "S=$(mktemp -d)"]
    for index, path in enumerate(closed):  # staged before the folders above them are covered
        lines += [f'mkdir "$S/{index}"', f'mount --bind {q(str(path))} "$S/{index}"']
    for ancestor in dict.fromkeys(closed.values()):
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {q(str(ancestor))}")
    for index, path in enumerate(closed):
        lines += [f"mkdir -p {q(str(path))}", f'mount --move "$S/{index}" {q(str(path))}']
    lines.append('exec "$@"')
    script = "\n".join(lines)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *as_user]


def own_folder(prefix: str) -> Path:
    """A new folder under the system's temporary folder, owned by :data:`UID`."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chown(folder, UID, UID)
    return folder


def give(folder: Path) -> None:
    """Hand ``folder`` and everything in it to :data:`UID`."""
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, UID, UID)


def environment(home: Path, tmpdir: Path) -> dict[str, str]:
    """A plain login environment for :data:`UID` (the caller's, minus what says root)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SUDO_USER", "MAIL", "XDG_RUNTIME_DIR")}
    return {**env, "HOME": str(home), "USER": "ta", "LOGNAME": "ta", "TMPDIR": str(tmpdir)}
