"""JupyterHub for one course on one machine: ``jupyterhub -f deploy/jupyterhub/jupyterhub_config.py``.

Every user logs in with their account on this machine (PAM) and gets a JupyterLab running as
that account (the local process spawner) in the course's environment, which ``setup.sh``
installs under ``SEQCOURSE_PREFIX``. Students get the bundle's JupyterLab (the Validate button,
the kernel hint, ``course doctor``) with nbgrader's Assignment List on; the course's graders
(the Linux group ``SEQCOURSE_GRADERS``) also get Formgrader and Create Assignment. Which
extensions each role has, and the exchange directory, live in
``PREFIX/etc/hub/<role>/`` (copied from ``jupyter-config/`` by ``setup.sh``), put first on
the user server's ``JUPYTER_CONFIG_PATH``.

Settings from the environment (all optional): ``SEQCOURSE_PREFIX`` (/opt/seqcourse),
``SEQCOURSE_HUB_URL`` (http://127.0.0.1:8000: the address users open),
``SEQCOURSE_HUB_API_URL`` and ``SEQCOURSE_PROXY_API_URL`` (http://127.0.0.1:8081 and :8001),
``SEQCOURSE_STUDENTS`` and ``SEQCOURSE_GRADERS`` (the Linux groups allowed to log in:
seqcourse-students, seqcourse-graders), ``SEQCOURSE_STATE`` (where the hub keeps its database
and cookie secret: /var/lib/seqcourse-hub), ``SEQCOURSE_EXCHANGE`` (nbgrader's exchange:
/srv/nbgrader/exchange).
"""

import grp
import os
import pwd
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

PREFIX = Path(os.environ.get("SEQCOURSE_PREFIX", "/opt/seqcourse"))
STUDENTS = os.environ.get("SEQCOURSE_STUDENTS", "seqcourse-students")
GRADERS = os.environ.get("SEQCOURSE_GRADERS", "seqcourse-graders")
STATE = Path(os.environ.get("SEQCOURSE_STATE", "/var/lib/seqcourse-hub"))
EXCHANGE = os.environ.get("SEQCOURSE_EXCHANGE", "/srv/nbgrader/exchange")

c.JupyterHub.bind_url = os.environ.get("SEQCOURSE_HUB_URL", "http://127.0.0.1:8000")
# the hub's own API and the proxy's, on this machine only
c.JupyterHub.hub_bind_url = os.environ.get("SEQCOURSE_HUB_API_URL", "http://127.0.0.1:8081")
c.ConfigurableHTTPProxy.api_url = os.environ.get("SEQCOURSE_PROXY_API_URL", "http://127.0.0.1:8001")
# the hub's database and cookie secret, outside the repository and the users' homes
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
# configurable-http-proxy from npm, installed by setup.sh beside the environment
c.ConfigurableHTTPProxy.command = [
    str(PREFIX / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")
]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# Log in with this machine's accounts; only the course's two groups may.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {STUDENTS, GRADERS}
c.PAMAuthenticator.open_sessions = False  # no PAM session (systemd-logind) per server

# Each user's JupyterLab runs as that account, in the course's environment, in their home.
c.JupyterHub.spawner_class = "localprocess"
# Each server starts as its user: at the first start it copies the executed lectures into
# ~/lectures (the user's to run and change), then runs JupyterLab for the hub.
c.Spawner.cmd = [
    "/bin/sh",
    "-c",
    f'[ -e "$HOME/lectures" ] || cp -R {PREFIX / "share" / "lectures"} "$HOME/lectures"; '
    f'exec {PREFIX / "env" / "bin" / "jupyterhub-singleuser"} "$@"',
    "jupyterhub-singleuser",  # $0; the spawner's arguments follow as "$@"
]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120  # a first start compiles and imports JupyterLab's extensions
c.Spawner.start_timeout = 180


def role(username: str) -> str:
    """``grader`` for a member of the graders' group, else ``student``."""
    try:
        group, account = grp.getgrnam(GRADERS), pwd.getpwnam(username)
    except KeyError:
        return "student"
    grader = username in group.gr_mem or account.pw_gid == group.gr_gid
    return "grader" if grader else "student"


def pre_spawn_hook(spawner) -> None:
    """Put the role's settings first on the server's JUPYTER_CONFIG_PATH, and the
    environment's programs first on its PATH (the terminal's ``python`` is the course's)."""
    settings = PREFIX / "etc" / "hub" / role(spawner.user.name)
    spawner.environment["JUPYTER_CONFIG_PATH"] = str(settings)
    spawner.environment["PATH"] = f"{PREFIX / 'env' / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    # read by the role's nbgrader_config.py, and by `course handin` (submit in the Assignment List)
    spawner.environment["SEQCOURSE_EXCHANGE"] = EXCHANGE


c.Spawner.pre_spawn_hook = pre_spawn_hook
