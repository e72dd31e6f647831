#!/usr/bin/env bash
# Install the course's JupyterHub on this machine, as root, from a built course repository:
#   sudo bash deploy/jupyterhub/setup.sh
# (after `make` in the repository: it installs the student bundle, dist/sequence-models/).
#
# It makes, and touches nothing else:
#   $SEQCOURSE_PREFIX (/opt/seqcourse)  env/: the students' environment (the bundle's packages,
#                                       the course package, JupyterHub for the user servers);
#                                       proxy/: configurable-http-proxy from npm;
#                                       etc/: the hub's configuration and each role's settings;
#                                       share/lectures/: the executed lectures, copied into
#                                       each user's home at their first start
#   $SEQCOURSE_EXCHANGE (/srv/nbgrader/exchange)  nbgrader's exchange, writable by all users
#   $SEQCOURSE_STATE (/var/lib/seqcourse-hub)     the hub's database and cookie secret
#   the Linux groups $SEQCOURSE_STUDENTS and $SEQCOURSE_GRADERS (seqcourse-students and
#   seqcourse-graders: who may log in, and as what)
# The hub reads the same variables (jupyterhub_config.py). Run it again after the course changes: it updates all of that in place.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PREFIX="${SEQCOURSE_PREFIX:-/opt/seqcourse}"
EXCHANGE="${SEQCOURSE_EXCHANGE:-/srv/nbgrader/exchange}"
STATE="${SEQCOURSE_STATE:-/var/lib/seqcourse-hub}"
STUDENTS="${SEQCOURSE_STUDENTS:-seqcourse-students}"
GRADERS="${SEQCOURSE_GRADERS:-seqcourse-graders}"
PYTHON="${PYTHON:-/usr/bin/python3}"
BUNDLE="$REPO/dist/sequence-models"
CPU_INDEX="https://download.pytorch.org/whl/cpu"  # PyPI's Linux torch is the multi-GB CUDA build
# Where pip finds the CPU build of torch: PyTorch's CPU index, unless SEQCOURSE_TORCH_INDEX says
# otherwise (empty: pip's own settings alone, for a machine with a mirror or the wheel on disk).
TORCH_INDEX="${SEQCOURSE_TORCH_INDEX-$CPU_INDEX}"
JUPYTERHUB="jupyterhub==6.1.1"
PROXY="configurable-http-proxy@5"

fail() { echo "setup.sh: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (it installs under $PREFIX and makes groups)"
[ -d "$BUNDLE/course" ] || fail "no student bundle in $BUNDLE: run \`make\` in $REPO first"
command -v npm > /dev/null || fail "npm not found: install Node.js 18 or newer (apt install nodejs npm)"
# Every user's server runs this Python as that user: it must be readable by all (a Python
# built inside root's home, such as pyenv's, is not).
runuser -u nobody -- "$PYTHON" -c "" 2> /dev/null \
  || fail "$PYTHON cannot be run by other accounts: set PYTHON to one they can (for example /usr/bin/python3)"

echo "setup.sh: the students' environment in $PREFIX/env"
umask 022
[ -x "$PREFIX/env/bin/python" ] || "$PYTHON" -m venv "$PREFIX/env"
"$PREFIX/env/bin/python" -m pip install --quiet --upgrade pip
# the bundle's own install: its packages, then the course package with its JupyterLab settings
"$PREFIX/env/bin/python" -m pip install --quiet ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} \
  -r "$BUNDLE/requirements-student.txt" "$JUPYTERHUB"
"$PREFIX/env/bin/python" -m pip install --quiet --no-deps --force-reinstall "$BUNDLE"

echo "setup.sh: configurable-http-proxy in $PREFIX/proxy"
npm install --silent --no-fund --no-audit --prefix "$PREFIX/proxy" "$PROXY" > /dev/null

echo "setup.sh: the hub's configuration in $PREFIX/etc"
mkdir -p "$PREFIX/etc/hub"
cp "$REPO/deploy/jupyterhub/jupyterhub_config.py" "$PREFIX/etc/jupyterhub_config.py"
rm -rf "$PREFIX/etc/hub"/*
cp -r "$REPO/deploy/jupyterhub/jupyter-config/student" "$REPO/deploy/jupyterhub/jupyter-config/grader" \
  "$PREFIX/etc/hub/"
rm -rf "$PREFIX/share/lectures"
mkdir -p "$PREFIX/share"
cp -r "$BUNDLE/lectures" "$PREFIX/share/lectures"
chmod -R a+rX "$PREFIX"

echo "setup.sh: the exchange in $EXCHANGE, the hub's state in $STATE"
mkdir -p "$EXCHANGE" "$STATE"
chmod 1777 "$EXCHANGE"  # each student writes their submissions; nobody removes another's
chmod 700 "$STATE"
groupadd -f "$STUDENTS"
groupadd -f "$GRADERS"

cat << EOF
setup.sh: done. Next:
  accounts:  useradd -m -K HOME_MODE=0700 -G $STUDENTS STUDENT && passwd STUDENT
             useradd -m -K HOME_MODE=0700 -G $GRADERS GRADER && passwd GRADER
  the hub:   $PREFIX/env/bin/jupyterhub -f $PREFIX/etc/jupyterhub_config.py
  (then open http://127.0.0.1:8000; deploy/jupyterhub/README.md goes on from there)
EOF
