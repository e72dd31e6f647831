"""``python -m course doctor``: each check's verdict, its fix, and the bundle README's recipes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from course import doctor
from tools.build import CPU_INDEX, STUDENT_README
from tools.notebooks import REPO
from tools.student_lab import readme_recipes


@pytest.mark.parametrize(
    "version, status, says",
    [
        ((3, 9, 6), doctor.FAIL, "too old"),
        ((3, 10, 0), doctor.WARN, "tested with 3.11"),
        ((3, 11, 7), doctor.OK, "Python 3.11.7"),
        ((3, 13, 1), doctor.WARN, "tested with 3.11"),
    ],
)
def test_python_versions(version, status, says):
    finding = doctor.check_python(version)
    assert finding.status == status and says in finding.what, finding
    if status == doctor.FAIL:  # says how to get a Python that works, on a Mac too
        assert "python3.11 -m venv .venv" in finding.fix and "3.9" in finding.fix


def test_an_intel_mac_is_told_what_to_use_instead():
    finding = doctor.check_platform("Darwin", "x86_64")
    assert finding.status == doctor.FAIL and "Intel Mac" in finding.what
    assert "JupyterHub" in finding.fix
    assert doctor.check_platform("Darwin", "arm64").status == doctor.OK
    assert doctor.check_platform("Linux", "x86_64").status == doctor.OK


def test_only_linux_is_sent_to_the_cpu_index():
    assert doctor.CPU_INDEX == CPU_INDEX
    linux, mac, windows = (doctor.install_commands(s) for s in ("Linux", "Darwin", "Windows"))
    assert f"--extra-index-url {CPU_INDEX}" in linux[2]
    assert "index" not in mac[2] and "index" not in windows[2]
    assert windows[0].startswith("py -3.11") and "\\Scripts\\" in windows[2]
    for commands in (linux, mac, windows):  # pip is brought up to date before the install
        assert commands[1].endswith(" -m pip install --upgrade pip"), commands


def test_the_bundle_readme_gives_the_doctors_recipe_for_each_system():
    blocks = readme_recipes(STUDENT_README.read_text())
    assert sorted(blocks) == ["Linux", "Windows", "macOS"]
    for system, key in (("Linux", "Linux"), ("macOS", "Darwin"), ("Windows", "Windows")):
        assert blocks[system][:3] == doctor.install_commands(key), system
        assert "course doctor" in blocks[system][3] and "jupyter lab" in blocks[system][4]


def test_the_doctor_in_the_course_teams_environment():
    result = subprocess.run(
        [sys.executable, "-m", "course", "doctor"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    for what in ("Python", "PyTorch 2.13.0", "course package", "checkpoints load", "kernel python3",
                 "widgets: ipywidgets", "Validate"):  # fmt: skip
        assert re.search(rf"^  ok +.*{re.escape(what)}", out, re.M) or what == "Validate", out
    # the team's environment enables nbgrader's instructor panels: a student's would not
    assert re.search(r"^  warning .*instructor panels are on", out, re.M), out
    assert out.rstrip().endswith("course doctor: ready, with warnings above"), out


def test_the_doctor_before_anything_is_installed():
    """``python -S``: no site-packages, as on a fresh Python; stdlib only, no traceback."""
    result = subprocess.run(
        [sys.executable, "-S", "-m", "course", "doctor"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "Traceback" not in out + result.stderr
    assert re.search(r"^  FAIL +PyTorch is not installed", out, re.M), out
    assert doctor.install_commands()[-1] in out, out
    # nothing after it: every later check would fail for the same reason
    assert out.rstrip().endswith(f"{doctor.install_commands()[-1]}\ncourse doctor: not ready: "
                                 "fix the FAIL line(s), then run it again"), out  # fmt: skip


def test_a_failing_check_skips_the_checks_that_need_it(monkeypatch):
    def check_course_installed():
        return doctor.Finding(doctor.FAIL, "simulated: not installed", "install")

    assert doctor.NEEDS[doctor.check_data] is doctor.check_course_installed
    assert doctor.NEEDS[doctor.check_kernel] is doctor.check_course_installed
    checks = [doctor.check_python, check_course_installed, doctor.check_data, doctor.check_kernel]
    monkeypatch.setattr(doctor, "CHECKS", checks)
    monkeypatch.setattr(
        doctor,
        "NEEDS",
        {c: check_course_installed for c in (doctor.check_data, doctor.check_kernel)},
    )
    monkeypatch.setattr(doctor, "_running", lambda: (3, 11, 7))
    assert [f.what for f in doctor.run_checks()] == ["Python 3.11.7", "simulated: not installed"]


def test_a_check_that_raises_is_a_fail_line_not_a_traceback(monkeypatch, capsys):
    def check_broken():
        raise RuntimeError("simulated")

    monkeypatch.setattr(doctor, "CHECKS", [doctor.check_python, check_broken])
    monkeypatch.setattr(doctor, "_running", lambda: (3, 11, 7))
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  FAIL +broken: RuntimeError: simulated$", out, re.M), out
    assert "fix: install the course" in out


def test_a_python_too_old_stops_the_checks_there(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "_running", lambda: (3, 9, 6))
    assert doctor.main([]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert lines[0].startswith("  FAIL    Python 3.9.6") and "fix:" in lines[1]
    assert len(lines) == 2, lines  # nothing after it: PyTorch cannot be judged on that Python


def test_torch_the_cuda_build_and_another_version(monkeypatch):
    import torch

    assert doctor.check_torch().status == doctor.OK
    assert doctor.check_device().status == doctor.OK
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    finding = doctor.check_torch()
    assert finding.status == doctor.WARN and "CUDA 12.8 build" in finding.what
    assert f"--index-url {CPU_INDEX}" in finding.fix
    monkeypatch.setattr(torch, "__version__", "2.5.1")
    finding = doctor.check_torch()
    assert finding.status == doctor.FAIL and "pinned to 2.13.0" in finding.what


def _config(folder, extensions: dict) -> None:
    target = folder / "jupyter_server_config.d"
    target.mkdir(parents=True, exist_ok=True)
    (target / "x.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": extensions}}))


def test_validate_needs_its_server_extension_and_no_instructor_panels(monkeypatch, tmp_path):
    import jupyter_core.paths

    assert doctor.check_widgets().status == doctor.OK
    validate = "nbgrader.server_extensions.validate_assignment"
    formgrader = "nbgrader.server_extensions.formgrader"
    monkeypatch.setattr(jupyter_core.paths, "jupyter_config_path", lambda: [str(tmp_path)])
    _config(tmp_path, {validate: True, formgrader: False})
    assert doctor.check_validate().status == doctor.OK
    _config(tmp_path, {validate: True, formgrader: True})
    assert doctor.check_validate().status == doctor.WARN
    _config(tmp_path, {validate: False})
    finding = doctor.check_validate()
    assert finding.status == doctor.FAIL and "Validate button would fail" in finding.what
