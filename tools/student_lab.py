"""The student's set-up, reproduced: unpack the bundle, install it, run JupyterLab on it.

Used by ``tests/build/test_student_flow.py`` (which drives the JupyterLab in Chromium) and by hand::

    python -m tools.student_lab /tmp/lab    # unpack + install + serve until Ctrl-C

Everything follows the bundle's README: a fresh virtual environment, then
``pip install -r requirements-student.txt .`` in the unpacked bundle (pip's wheel cache makes
it quick on a machine that has installed the course before). JupyterLab runs on 127.0.0.1
with a random token and isolated Jupyter/IPython directories, so nothing from the user's own
configuration leaks in.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from course.doctor import CPU_INDEX
from tools.fit_replay import STARTUP_NAME, THREADS_FILE, write_startup
from tools.notebooks import REPO

BUNDLE_ZIP = REPO / "dist" / "student.zip"
STUDENT_REQUIREMENTS = "requirements-student.txt"

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
# What the student's processes do not take from the test's environment: its Python path and
# venv, and PYTHONDONTWRITEBYTECODE, so that the installation (made with --no-compile) caches
# each module the first time it is imported, as a student's does at its install; with it set
# (as on the course machines) every kernel compiled torch again.
NOT_INHERITED = frozenset({"PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"})


class StudentLabError(RuntimeError):
    """Installing the bundle or starting JupyterLab failed; the message carries the log."""


# -- install ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installation:
    bundle: Path  # the unpacked bundle (the student's course folder)
    venv: Path
    seconds: float
    megabytes: float

    @property
    def bin(self) -> Path:
        return self.venv / ("Scripts" if os.name == "nt" else "bin")


def unpack_bundle(archive: Path, target: Path) -> Path:
    """Unzip the student bundle into ``target`` (as a student does with student.zip); return
    the one folder it unpacks to (the course folder)."""
    if not archive.is_file():
        raise StudentLabError(f"{archive} does not exist; run `make` first")
    if target.exists():
        shutil.rmtree(target)
    with zipfile.ZipFile(archive) as bundle:
        tops = {name.split("/", 1)[0] for name in bundle.namelist()}
        if len(tops) != 1:
            raise StudentLabError(f"{archive} should hold one folder, not {sorted(tops)[:5]}")
        bundle.extractall(target)
    folder = target / tops.pop()
    if not (folder / STUDENT_REQUIREMENTS).is_file():
        raise StudentLabError(f"{archive} has no {STUDENT_REQUIREMENTS}")
    return folder


def _size_mb(folder: Path) -> float:
    total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
    return total / 1e6


README_SYSTEMS = ("Linux", "macOS", "Windows")  # the bundle README's install recipes, by system


def readme_recipes(text: str) -> dict[str, list[str]]:
    """{system: the command lines of its recipe} in the bundle README ``text``: the fenced block
    under each bold ``**Linux...**``, ``**macOS...**`` and ``**Windows...**`` heading."""
    systems = "|".join(README_SYSTEMS)
    return {
        system: block.strip().splitlines()
        for system, block in re.findall(rf"\*\*({systems})[^*]*\*\*.*?```\w+\n(.*?)```", text, re.S)
    }


def readme_pip_steps(bundle: Path) -> list[list[str]]:
    """The pip arguments (after ``pip install``) of each pip line of the bundle README's Linux
    recipe, in order: bring pip up to date, then install the course. The install must name
    PyTorch's CPU wheel index: from PyPI alone, Linux gets the multi-GB CUDA build."""
    recipe = readme_recipes((bundle / "README.md").read_text()).get("Linux", [])
    steps = [
        shlex.split(line.split("pip install", 1)[1]) for line in recipe if "pip install" in line
    ]
    if [step[:2] for step in steps[:-1]] != [["--upgrade", "pip"]] or not steps:
        raise StudentLabError(
            f"{bundle / 'README.md'}: the Linux recipe should update pip, then install the course"
        )
    if steps[-1][:2] != ["--extra-index-url", CPU_INDEX]:
        raise StudentLabError(
            f"the README's Linux install does not use {CPU_INDEX}: {' '.join(steps[-1])}"
        )
    return steps


def install_bundle(bundle: Path, venv: Path, *, python: str = sys.executable) -> Installation:
    """Create a fresh venv and install the bundle into it with the README's Linux recipe, but
    from the wheels on this machine: offline, without the CPU index it names (pip's own
    configuration finds the CPU build of the pinned torch here), and with ``--no-compile``.

    pip byte-compiles every module it installs, tens of thousands in torch, transformers and
    JupyterLab, which doubled the install's time here (about 200 s against 100 s on 2 cores);
    without it Python compiles each module the first time it is imported and caches it (the
    environment here leaves out PYTHONDONTWRITEBYTECODE: :data:`NOT_INHERITED`). What is
    installed, and from where, is the same."""
    if venv.exists():
        shutil.rmtree(venv)
    started = time.perf_counter()
    *first, install = readme_pip_steps(bundle)
    pip = [str(venv / ("Scripts" if os.name == "nt" else "bin") / "python"), "-m", "pip"]
    steps = [
        [python, "-m", "venv", str(venv)],
        *([*pip, "install", "--quiet", *arguments] for arguments in first),
        [*pip, "install", "--quiet", "--no-compile", *install[2:]],  # without the CPU index
    ]
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    for command in steps:
        result = subprocess.run(command, cwd=bundle, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise StudentLabError(
                f"`{' '.join(command)}` failed (exit {result.returncode}):\n"
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            )
    seconds = time.perf_counter() - started
    return Installation(bundle, venv, seconds, _size_mb(venv))


def installed_version(installation: Installation, package: str) -> str | None:
    """The version of ``package`` in the student's environment (None if absent)."""
    code = (
        "import importlib.metadata as m, sys\n"
        "try: print(m.version(sys.argv[1]))\n"
        "except m.PackageNotFoundError: print('')"
    )
    result = subprocess.run(
        [str(installation.bin / "python"), "-c", code, package],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip() or None


# -- JupyterLab -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lab:
    url: str  # http://127.0.0.1:PORT
    token: str
    root: Path
    log: Path
    runtime: Path  # Jupyter's runtime folder: the server's file, its kernels' connection files

    def page(self, path: str = "", workspace: str | None = None) -> str:
        """URL of a file in JupyterLab (or the Lab itself), logged in with the token.

        A ``workspace`` named for the first time starts from an empty layout, at the
        launcher; JupyterLab saves its layout on the server, and a later visit to the same
        name reopens the tabs left open in it.
        """
        where = f"/workspaces/{workspace}" if workspace else ""
        where += f"/tree/{path}" if path else ""
        return f"{self.url}/lab{where}?token={self.token}"

    def request(self, path: str, method: str = "GET") -> tuple[int, str]:
        """Call an API path of the server (with the token); (status, body)."""
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", "replace")

    def get(self, path: str) -> tuple[int, str]:
        return self.request(path)

    def shut_down_kernels(self) -> None:
        """End every session and its kernel (as *Kernel -> Shut Down All Kernels* does)."""
        status, body = self.request("/api/sessions")
        for session in json.loads(body) if status == 200 else []:
            self.request(f"/api/sessions/{session['id']}", method="DELETE")


def lab_environment(
    installation: Installation,
    home: Path,
    *,
    replay: Path | None = None,
    runtime: Path | None = None,
) -> dict[str, str]:
    """The server's environment: the student's venv first on PATH, private Jupyter dirs.

    replay: a folder of training runs the build recorded (``build/fits``); the kernels replay
    a run found there instead of training it again (``tools/fit_replay.py``, installed by a
    startup file in ``home/ipython``), with the thread counts the build's kernels had (its
    ``threads.json``).
    runtime: Jupyter's runtime folder (the server's file, the kernels' connection files and,
    with :func:`kernel_socket_options`, their sockets); ``home/runtime`` unless given.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {*NOT_INHERITED, "COURSE_METRICS_DIR"}
        and not k.startswith(("JUPYTER", "IPYTHON", "NBGRADER"))
    }
    startup = home / "ipython" / "profile_default" / "startup" / STARTUP_NAME
    startup.unlink(missing_ok=True)  # a home used before, to replay, does not replay now
    if replay is not None:
        write_startup(home / "ipython", replay=replay)
        threads = replay / THREADS_FILE
        if threads.is_file():
            env.update({k: str(v) for k, v in json.loads(threads.read_text()).items()})
    for name in ("config", "data", "runtime", "ipython", "mpl"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(
        PATH=os.pathsep.join([str(installation.bin), env.get("PATH", "")]),
        VIRTUAL_ENV=str(installation.venv),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(runtime or home / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        IPYTHONDIR=str(home / "ipython"),
        MPLCONFIGDIR=str(home / "mpl"),
    )
    return env


VALIDATE_CONFIG = "nbgrader_config.py"  # read by nbgrader's Validate from JUPYTER_CONFIG_DIR


def kernel_socket_options(config_dir: Path, runtime: Path) -> list[str]:
    """The server's options that give every kernel it starts private Unix sockets; and the same
    for the kernels of nbgrader's Validate, written to ``config_dir/nbgrader_config.py``.

    Over TCP a kernel's ports are picked free, released, and bound again by the kernel a moment
    later; while the suite starts kernels side by side (its workers, the build's and the
    graders' kernels, this server's), another process can take a port in between, and that
    kernel dies at once ("Address already in use"). A Unix socket in a private folder cannot be
    taken. The server's kernels put theirs beside their connection files in ``runtime`` (each
    named after its kernel, so two starting at once never pick the same); Validate, which runs
    one notebook at a time in this server, puts them under ``runtime/validate``. A socket's
    path is limited to about 100 characters: ``runtime`` must be short. Windows has no IPC
    transport for ZeroMQ: there nothing changes (and a student's own settings never get this).
    """
    if os.name == "nt":
        return []
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / VALIDATE_CONFIG).write_text(
        "# Written by tools.student_lab.kernel_socket_options: Validate's kernels on Unix sockets\n"
        'c.KernelManager.transport = "ipc"\n'
        f"c.KernelManager.ip = {str(runtime / 'validate')!r}\n"
    )
    return ["--KernelManager.transport=ipc"]


@contextmanager
def running_lab(
    installation: Installation, home: Path, *, timeout: float = 120, replay: Path | None = None
) -> Iterator[Lab]:
    """Start the student's ``jupyter lab`` on 127.0.0.1 in the bundle folder; stop it after.
    ``replay``: as in :func:`lab_environment`."""
    home.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    command = [
        str(installation.bin / "jupyter"),
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        "--port=0",  # a free port, chosen by the server; read back from its runtime file
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={installation.bundle}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # JupyterLab refuses to run as root without it
    log = home / "jupyterlab.log"
    # A short private runtime folder: the kernels' sockets go there (kernel_socket_options).
    with tempfile.TemporaryDirectory(prefix="jr", ignore_cleanup_errors=True) as runtime:
        env = lab_environment(installation, home, replay=replay, runtime=Path(runtime))
        command += kernel_socket_options(Path(env["JUPYTER_CONFIG_DIR"]), Path(runtime))
        with _serving(
            command, env, Lab("", token, installation.bundle, log, Path(runtime)), timeout
        ) as lab:
            yield lab


@contextmanager
def _serving(command: list[str], env: dict[str, str], given: Lab, timeout: float) -> Iterator[Lab]:
    """Run the server ``command`` (with ``given``'s token, root and log); the Lab, with its
    address, once it answers; stop the server (and its kernels) after."""
    log = given.log
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            command,
            cwd=given.root,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        runtime = Path(env["JUPYTER_RUNTIME_DIR"]) / f"jpserver-{process.pid}.json"
        deadline = time.monotonic() + timeout
        lab = None
        while True:
            if process.poll() is not None:
                raise StudentLabError(
                    f"jupyter lab exited ({process.returncode}):\n{log.read_text()}"
                )
            if lab is None and runtime.is_file():
                try:
                    port = json.loads(runtime.read_text())["port"]
                except (ValueError, KeyError):
                    port = None  # being written
                if port:
                    lab = replace(given, url=f"http://127.0.0.1:{port}")
            if lab is not None:
                try:
                    if lab.get("/api/status")[0] == 200:
                        break
                except (OSError, http.client.HTTPException):
                    pass
            if time.monotonic() > deadline:
                raise StudentLabError(
                    f"jupyter lab did not answer in {timeout:.0f} s:\n{log.read_text()}"
                )
            time.sleep(0.5)
        yield lab
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


# -- what a student types -------------------------------------------------------------------


def filled_in_answers(reference: Path) -> dict[str, tuple[str, str]]:
    """{grade_id: (cell_type, text)} for every solution cell of a reference notebook.

    The text is what a student who found the reference answer would type: the reference
    cell without nbgrader's solution markers.
    """
    notebook = nbformat.read(reference, as_version=4)
    answers = {}
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution"):
            continue
        lines = [line for line in cell.source.splitlines() if line.strip() not in SOLUTION_MARKERS]
        answers[meta["grade_id"]] = (cell.cell_type, "\n".join(lines).strip("\n"))
    if not answers:
        raise StudentLabError(f"{reference} has no nbgrader solution cells")
    return answers


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", nargs="?", type=Path)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="student-lab-"))
    bundle = unpack_bundle(BUNDLE_ZIP, workdir / "course")
    installation = install_bundle(bundle, workdir / "venv")
    print(f"installed in {installation.seconds:.0f} s, {installation.megabytes:.0f} MB")
    with running_lab(installation, workdir / "home") as lab:
        print(f"JupyterLab: {lab.page()}  (Ctrl-C stops it)")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
