"""The hub set-ups, without a hub: ``deploy/jupyterhub/``'s configuration as JupyterHub,
JupyterLab and Jupyter Server read it, its spawner's command run for real, and the Zero to
JupyterHub files against it."""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from traitlets.config.loader import PyFileConfigLoader

from course.doctor import CPU_INDEX
from tools import hub
from tools.notebooks import REPO

DEPLOY = REPO / "deploy"
HUB = DEPLOY / "jupyterhub"
K8S = DEPLOY / "zero-to-jupyterhub"
ROLES = HUB / "jupyter-config"
BUNDLE_SETTINGS = REPO / "tools" / "templates" / "jupyter-config" / "etc" / "jupyter"
NBGRADER = "@jupyter/nbgrader:"


def load_hub_config(monkeypatch, **env: str):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return PyFileConfigLoader("jupyterhub_config.py", path=str(HUB)).load_config()


def fake_spawner(name: str) -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(name=name, groups=[]), environment={})


def me() -> tuple[str, str]:
    """This account's name and its primary group's: a grader in the tests below."""
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def test_the_hub_logs_in_the_course_groups_and_spawns_their_servers_in_its_environment(
    monkeypatch, tmp_path
):
    config = load_hub_config(
        monkeypatch, SEQCOURSE_PREFIX=str(tmp_path), SEQCOURSE_HUB_URL="http://127.0.0.1:8765"
    )
    assert config.JupyterHub.authenticator_class == "pam"
    assert config.JupyterHub.spawner_class == "localprocess"
    assert config.PAMAuthenticator.allowed_groups == {"seqcourse-students", "seqcourse-graders"}
    assert config.JupyterHub.bind_url == "http://127.0.0.1:8765"
    proxy = Path(config.ConfigurableHTTPProxy.command[0])
    assert proxy == tmp_path / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    assert f"exec {tmp_path / 'env' / 'bin' / 'jupyterhub-singleuser'}" in config.Spawner.cmd[2]
    assert config.Spawner.default_url == "/lab"


def test_the_spawner_copies_the_lectures_once_then_runs_the_user_server(monkeypatch, tmp_path):
    prefix, home = tmp_path / "prefix", tmp_path / "home"
    (prefix / "share" / "lectures").mkdir(parents=True)
    (prefix / "share" / "lectures" / "01_rnn_bptt.ipynb").write_text("{}")
    server = prefix / "env" / "bin" / "jupyterhub-singleuser"
    server.parent.mkdir(parents=True)
    server.write_text('#!/bin/sh\necho "server: $*"\n')
    server.chmod(0o755)
    home.mkdir()
    command = load_hub_config(monkeypatch, SEQCOURSE_PREFIX=str(prefix)).Spawner.cmd
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    run = subprocess.run([*command, "--debug", "--port=9999"], env=env, capture_output=True,
                         text=True, timeout=30, cwd=home)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout == "server: --debug --port=9999\n"  # the spawner's arguments, as given
    copy = home / "lectures" / "01_rnn_bptt.ipynb"
    assert copy.read_text() == "{}"
    copy.write_text("the student's own work")
    again = subprocess.run([*command, "--debug"], env=env, capture_output=True, text=True,
                           timeout=30, cwd=home)  # fmt: skip
    assert again.returncode == 0 and copy.read_text() == "the student's own work"


def test_each_role_gets_its_settings_first_and_the_exchange(monkeypatch, tmp_path):
    user, group = me()
    config = load_hub_config(
        monkeypatch, SEQCOURSE_GRADERS=group, SEQCOURSE_EXCHANGE=str(tmp_path / "exchange")
    )
    hook = config.Spawner.pre_spawn_hook
    roles = {}
    for name in (user, "no-such-account-here"):
        spawner = fake_spawner(name)
        hook(spawner)
        roles[name] = spawner.environment
    assert Path(roles[user]["JUPYTER_CONFIG_PATH"]).name == "grader"
    assert Path(roles["no-such-account-here"]["JUPYTER_CONFIG_PATH"]).name == "student"
    for environment in roles.values():
        assert environment["SEQCOURSE_EXCHANGE"] == str(tmp_path / "exchange")
        assert environment["PATH"].startswith("/opt/seqcourse/env/bin:")


def _server_settings(role: str, tmp_path: Path) -> tuple[dict, list]:
    """The nbgrader server extensions and disabled JupyterLab extensions of a user server of
    ``role``, with the student bundle's own settings below the role's (as the hub has them)."""
    script = (
        "import json\n"
        "from jupyter_server.serverapp import ServerApp\n"
        "from jupyterlab_server.config import get_page_config\n"
        "app = ServerApp()\n"
        "app.find_server_extensions()\n"
        "server = {k: v for k, v in app.jpserver_extensions.items() if k.startswith('nbgrader')}\n"
        "print(json.dumps([server, sorted(get_page_config([])['disabledExtensions'])]))\n"
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_PATH": os.pathsep.join([str(ROLES / role), str(BUNDLE_SETTINGS)]),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "user-config"),  # no user settings of our own
    }
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    server, disabled = json.loads(done.stdout)
    return server, disabled


def test_students_get_the_assignment_list_and_validate_and_no_grader_panel(tmp_path):
    server, disabled = _server_settings("student", tmp_path)
    assert server == {
        "nbgrader.server_extensions.assignment_list": True,
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.course_list": False,
        "nbgrader.server_extensions.formgrader": False,
    }
    # the bundle turns the Assignment List off (no exchange on a laptop): the hub turns it on
    assert f"{NBGRADER}assignment-list" not in disabled
    assert set(disabled) == {
        f"{NBGRADER}{n}" for n in ("formgrader", "course-list", "create-assignment")
    }


def test_graders_get_every_nbgrader_panel(tmp_path):
    server, disabled = _server_settings("grader", tmp_path)
    assert set(server.values()) == {True} and len(server) == 4
    assert not [name for name in disabled if name.startswith(NBGRADER)]


@pytest.mark.parametrize("role", ["student", "grader"])
def test_the_roles_nbgrader_settings_name_the_course_and_the_hubs_exchange(
    role, monkeypatch, tmp_path
):
    monkeypatch.setenv("SEQCOURSE_EXCHANGE", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROLES / role)).load_config()
    assert config.CourseDirectory.course_id == hub.COURSE_ID
    assert config.Exchange.root == str(tmp_path)
    if role == "grader":  # Formgrader opens the course directory tools.hub makes
        assert config.CourseDirectory.root == str(tmp_path / "home" / "seqcourse")
    monkeypatch.delenv("SEQCOURSE_EXCHANGE")
    default = PyFileConfigLoader("nbgrader_config.py", path=str(ROLES / role)).load_config()
    assert default.Exchange.root == hub.EXCHANGE


def test_setup_script_is_valid_shell_and_pins_what_the_image_pins():
    assert subprocess.run(["bash", "-n", str(HUB / "setup.sh")]).returncode == 0
    script = (HUB / "setup.sh").read_text()
    dockerfile = (K8S / "Dockerfile").read_text()
    jupyterhub = re.search(r'JUPYTERHUB="(jupyterhub==[\d.]+)"', script).group(1)
    assert jupyterhub in dockerfile
    assert f'CPU_INDEX="{CPU_INDEX}"' in script and f"--extra-index-url {CPU_INDEX}" in dockerfile
    for both in ("requirements-student.txt", "--no-deps"):
        assert both in script and both in dockerfile
    assert f'EXCHANGE="${{SEQCOURSE_EXCHANGE:-{hub.EXCHANGE}}}"' in script


def test_the_kubernetes_image_holds_the_one_machine_environment_and_settings():
    dockerfile = (K8S / "Dockerfile").read_text()
    copies = re.findall(r"^COPY (\S+) (\S+)$", dockerfile, re.M)
    assert ("deploy/jupyterhub/jupyter-config/student", "$PREFIX/etc/hub/student") in copies
    assert ("deploy/jupyterhub/jupyter-config/grader", "$PREFIX/etc/hub/grader") in copies
    assert ("dist/sequence-models", "/tmp/bundle") in copies
    for source, _ in copies:
        if source.startswith("deploy/"):
            assert (REPO / source).is_dir(), source
    # the image's command is the one-machine spawner's, with the image's paths
    cmd = yaml.safe_load(re.search(r"^CMD (\[.*\])$", dockerfile, re.M).group(1))
    assert cmd[:2] == ["/bin/sh", "-c"] and "jupyterhub-singleuser" in cmd[2]
    assert "/opt/seqcourse/share/lectures" in cmd[2]
    assert re.search(r"^ENV PREFIX=/opt/seqcourse", dockerfile, re.M)


def test_the_kubernetes_values_mount_the_exchange_and_give_each_role_its_settings(tmp_path):
    values = yaml.safe_load((K8S / "config.yaml").read_text())
    mounts = values["singleuser"]["storage"]["extraVolumeMounts"]
    assert [m["mountPath"] for m in mounts] == [hub.EXCHANGE]
    volumes = values["singleuser"]["storage"]["extraVolumes"]
    assert {v["name"] for v in volumes} == {m["name"] for m in mounts}
    assert values["singleuser"]["defaultUrl"] == "/lab"
    assert "seqcourse-graders" in values["hub"]["loadGroups"]
    # the hub's extra configuration, run as the chart runs it (with `c` in scope)
    c = SimpleNamespace(KubeSpawner=SimpleNamespace())
    exec(compile(values["hub"]["extraConfig"]["seqcourse-roles"], "extraConfig", "exec"), {"c": c})
    environments = {}
    for groups in ([], ["seqcourse-graders"]):
        spawner = fake_spawner("someone")
        spawner.user.groups = [SimpleNamespace(name=g) for g in groups]
        c.KubeSpawner.pre_spawn_hook(spawner)
        environments[tuple(groups)] = spawner.environment
    assert environments[()]["JUPYTER_CONFIG_PATH"] == "/opt/seqcourse/etc/hub/student"
    assert (
        environments[("seqcourse-graders",)]["JUPYTER_CONFIG_PATH"]
        == "/opt/seqcourse/etc/hub/grader"
    )
    assert {e["SEQCOURSE_EXCHANGE"] for e in environments.values()} == {hub.EXCHANGE}


def test_the_guide_runs_the_commands_that_exist():
    guide = (HUB / "README.md").read_text()
    for command in ("setup.sh", "python -m tools.hub course", "nbgrader release_assignment",
                    "nbgrader collect", "python -m autograder grade", "--release-feedback"):  # fmt: skip
        assert command in guide, command
    for path in re.findall(r"`(deploy/[\w./-]+)`", guide):
        assert (REPO / path).exists(), path
