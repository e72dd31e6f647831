"""``python -m course doctor``: is this computer ready for the course? Each check says how to
fix what it finds.

Run it from the course folder, before installing (it then checks Python and prints the install
command for this computer) and after (it checks everything the notebooks need). Only the
standard library is imported until Python itself has passed, so a too-old Python gets a plain
message instead of a traceback.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.metadata
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

OLDEST = (3, 10)  # pyproject.toml's requires-python
TESTED = (3, 11)  # the version the course is built and tested with
TORCH = "2.13.0"  # requirements-student.txt's pin
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

OK, WARN, FAIL = "ok", "warning", "FAIL"


@dataclass(frozen=True)
class Finding:
    status: str  # OK, WARN or FAIL
    what: str  # the thing checked, with what was found
    fix: str = ""  # what to do about it (empty when nothing needs doing)


def install_commands(system: str | None = None) -> list[str]:
    """The bundle README's install lines for ``system`` (``platform.system()`` by default):
    make the environment, bring its pip up to date (the pip of Python 3.11.7, 23.2, took twice as
    long as pip 26 to resolve the course's packages), install."""
    system = system or platform.system()
    if system == "Windows":
        python = r".venv\Scripts\python"
        return [
            "py -3.11 -m venv .venv",
            f"{python} -m pip install --upgrade pip",
            f"{python} -m pip install -r requirements-student.txt .",
        ]
    index = f" --extra-index-url {CPU_INDEX}" if system == "Linux" else ""
    return [
        "python3.11 -m venv .venv",
        ".venv/bin/python -m pip install --upgrade pip",
        f".venv/bin/python -m pip install{index} -r requirements-student.txt .",
    ]


def _install_hint() -> str:
    lines = "".join(f"\n            {line}" for line in install_commands())
    return f"install the course: in its folder (the one with requirements-student.txt), run{lines}"


def _running() -> tuple[int, ...]:
    return tuple(sys.version_info[:3])


def check_python(version: tuple[int, ...] | None = None) -> Finding:
    version = tuple(version or _running())
    shown = ".".join(map(str, version))
    if version[:2] < OLDEST:
        return Finding(
            FAIL,
            f"Python {shown} ({sys.executable}) is too old: the course needs "
            f"{OLDEST[0]}.{OLDEST[1]} or newer",
            "install Python 3.11 (python.org, or `brew install python@3.11` on a Mac), then "
            "make the environment with it: `python3.11 -m venv .venv` (`py -3.11 -m venv .venv` "
            "on Windows). On a Mac, the `python3` of Apple's command-line tools is 3.9.",
        )
    if version[:2] != TESTED:
        return Finding(
            WARN,
            f"Python {shown}: the course is tested with {TESTED[0]}.{TESTED[1]}",
            "if an install or a lecture fails, make the environment with Python 3.11",
        )
    return Finding(OK, f"Python {shown}")


def check_platform(system: str | None = None, machine: str | None = None) -> Finding:
    system, machine = system or platform.system(), (machine or platform.machine()).lower()
    where = f"{system} on {machine}"
    if system == "Darwin" and machine in ("x86_64", "amd64", "i386"):
        return Finding(
            FAIL,
            f"{where} (an Intel Mac): PyTorch has published no wheels for Intel Macs since 2.2, "
            f"and the course needs {TORCH}",
            "work on the course's JupyterHub if your course runs one, or on a Linux or Windows "
            "computer, or on a Mac with Apple silicon",
        )
    return Finding(OK, where)


def check_torch() -> Finding:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return Finding(FAIL, "PyTorch is not installed in this Python", _install_hint())
    version = torch.__version__.split("+")[0]
    if version != TORCH:
        return Finding(
            FAIL,
            f"PyTorch {torch.__version__}: the course is pinned to {TORCH}",
            _install_hint(),
        )
    cuda = getattr(torch.version, "cuda", None)
    if cuda and not torch.cuda.is_available():
        return Finding(
            WARN,
            f"PyTorch {torch.__version__} is the CUDA {cuda} build (several GB) and this "
            "computer has no usable GPU",
            "the course runs on it, but the CPU build is a tenth of the size: "
            f"`python -m pip install --force-reinstall torch=={TORCH} --index-url {CPU_INDEX}`",
        )
    return Finding(OK, f"PyTorch {torch.__version__}")


def check_device() -> Finding:
    import torch

    if torch.cuda.is_available():
        return Finding(OK, f"device: cuda ({torch.cuda.get_device_name(0)}); the CPU is enough")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return Finding(OK, "device: mps (Apple GPU); the course runs on the CPU, which is enough")
    return Finding(OK, f"device: cpu, {torch.get_num_threads()} thread(s)")


def check_course_installed() -> Finding:
    """The ``course`` package is installed in this Python, not just found in the folder the
    doctor runs from (notebooks elsewhere would not find it there)."""
    here = Path.cwd().resolve()
    paths = [p for p in sys.path if p and Path(p).resolve() != here]
    found = list(importlib.metadata.distributions(name="course", path=paths))
    if not found:
        return Finding(
            FAIL,
            "the course package is not installed in this Python (notebooks would fail with "
            "\"No module named 'course'\")",
            _install_hint(),
        )
    return Finding(OK, f"course package {found[0].version}")


def check_data() -> Finding:
    """Every corpus file reads to its end (gzip checks its CRC) and every checkpoint loads and
    matches its recorded SHA-256."""
    from course import checkpoints

    files = sorted((Path(__file__).parent / "data" / "files").glob("*.gz"))
    if not files:
        return Finding(FAIL, "the course's corpora are missing", _install_hint())
    problems = []
    for file in files:
        try:
            with gzip.open(file, "rb") as handle:
                while handle.read(1 << 20):
                    pass
        except (OSError, EOFError) as error:
            problems.append(f"{file.name}: {error}")
    names = checkpoints.available_checkpoints()
    for name in names:
        try:
            checkpoints.load_checkpoint(name)
        except Exception as error:  # each kind says what is wrong with which file
            problems.append(f"checkpoint {name}: {error}")
    if problems:
        return Finding(
            FAIL,
            "course data damaged: " + "; ".join(problems),
            "unpack the course bundle again, then reinstall: " + _install_hint(),
        )
    return Finding(OK, f"course data: {len(files)} corpora, {len(names)} checkpoints load")


def _labextension(name: str) -> bool:
    from jupyter_core.paths import jupyter_path

    return any((Path(p) / name / "package.json").is_file() for p in jupyter_path("labextensions"))


def check_kernel() -> Finding:
    """The notebooks' kernel (``python3``) runs a Python that imports the course and torch."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError:
        return Finding(FAIL, "Jupyter is not installed in this Python", _install_hint())
    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return Finding(FAIL, "no python3 kernel", _install_hint())
    python = sys.executable if spec.argv[0] in ("python", "python3") else spec.argv[0]
    try:  # from a folder of its own: the course folder's `course/` must not stand in for it
        result = subprocess.run(
            [python, "-c", "import course, torch, ipykernel"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tempfile.gettempdir(),
        )
        why = "" if result.returncode == 0 else (result.stderr.strip().splitlines() or ["?"])[-1]
    except (OSError, subprocess.TimeoutExpired) as error:
        why = str(error) or type(error).__name__
    if why:
        return Finding(
            FAIL,
            f"the python3 kernel runs {python}, which cannot import the course ({why})",
            "start JupyterLab from the course's environment (`.venv/bin/jupyter lab`, or "
            r"`.venv\Scripts\jupyter lab` on Windows); if it persists, remove the python3 "
            "kernel listed by `jupyter kernelspec list` that is not in .venv",
        )
    return Finding(OK, f"kernel python3 runs {python}")


def check_widgets() -> Finding:
    try:
        widgets = importlib.import_module("ipywidgets")
    except ImportError:
        return Finding(FAIL, "ipywidgets is not installed", _install_hint())
    if not _labextension("@jupyter-widgets/jupyterlab-manager"):
        return Finding(
            FAIL,
            f"ipywidgets {widgets.__version__}, but JupyterLab's widget extension is missing "
            "(sliders would show as text)",
            _install_hint(),
        )
    return Finding(OK, f"widgets: ipywidgets {widgets.__version__} and its JupyterLab extension")


def check_validate() -> Finding:
    """nbgrader's Validate button: its JupyterLab extension and server extension."""
    from jupyter_core.paths import jupyter_config_path

    if not _labextension("@jupyter/nbgrader"):
        return Finding(
            FAIL, "nbgrader's JupyterLab extension (Validate) is missing", _install_hint()
        )
    enabled = {}
    for folder in reversed(jupyter_config_path()):  # later folders win: read the first last
        for file in sorted((Path(folder) / "jupyter_server_config.d").glob("*.json")):
            try:
                found = json.loads(file.read_text()).get("ServerApp", {})
            except (OSError, ValueError):
                continue
            enabled.update(found.get("jpserver_extensions", {}))
    if not enabled.get("nbgrader.server_extensions.validate_assignment"):
        return Finding(
            FAIL,
            "nbgrader's Validate server extension is not enabled (the Validate button would fail)",
            "the setting comes with the trailing `.` of the install; " + _install_hint(),
        )
    if enabled.get("nbgrader.server_extensions.formgrader"):
        return Finding(
            WARN,
            "Validate works, but nbgrader's instructor panels are on (the course's student "
            "settings are not installed)",
            "the student settings come with the trailing `.` of the install; " + _install_hint(),
        )
    return Finding(OK, "Validate: nbgrader's extensions, with the student settings")


# Python and the computer first, with the standard library only; then what needs PyTorch
CHECKS: list[Callable[[], Finding]] = [
    check_python,
    check_platform,
    check_torch,
    check_device,
    check_course_installed,
    check_data,
    check_kernel,
    check_widgets,
    check_validate,
]
NEEDS = {check_data: check_course_installed, check_kernel: check_course_installed}
# after one of these fails, the rest cannot be judged: fix it, then run the doctor again
STOPS = (check_python, check_platform, check_torch)


def run_checks() -> Iterator[Finding]:
    """Each check's finding in order; a check whose prerequisite failed is not run, and the
    checks stop after a failure of :data:`STOPS` (the rest would fail for the same reason)."""
    failed: set[Callable] = set()
    for check in CHECKS:
        if NEEDS.get(check) in failed:
            continue
        try:
            finding = check()
        except Exception as error:  # a broken install must give a line, not a traceback
            name = check.__name__
            name = name[len("check_") :] if name.startswith("check_") else name
            finding = Finding(FAIL, f"{name}: {type(error).__name__}: {error}", _install_hint())
        yield finding
        if finding.status == FAIL:
            failed.add(check)
            if check in STOPS:
                return


def main(argv: list[str] | None = None) -> int:
    print(f"course doctor: {sys.executable}")
    worst = OK
    for finding in run_checks():
        print(f"  {finding.status:<7} {finding.what}", flush=True)
        if finding.fix:
            print(f"          fix: {finding.fix}")
        if finding.status == FAIL or (finding.status == WARN and worst == OK):
            worst = finding.status
    summary = {
        OK: "ready",
        WARN: "ready, with warnings above",
        FAIL: "not ready: fix the FAIL line(s), then run it again",
    }
    print(f"course doctor: {summary[worst]}")
    return 1 if worst == FAIL else 0
