"""A one-node Slurm cluster in a folder, for the test that submits the grading's job array.

Debian's ``munge``, ``slurmctld`` and ``slurmd`` (``make slurm`` installs them) run in the
foreground as children of the caller, with a configuration, a munge key, state, spool and logs
all in the given folder and ports of their own, so nothing of the machine's own Slurm (if any)
is used or changed:

    with one_node(folder) as node:
        subprocess.run(["sbatch", "job.sbatch"], env=node.env)
        node.wait_idle(300)
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")


class SlurmMissing(RuntimeError):
    """A Slurm or munge program is not installed, or the node did not come up."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config(folder: Path, host: str, cpus: int, user: str = "root") -> str:
    """A ``slurm.conf`` for one node ``host`` with ``cpus`` CPUs, its daemons run by ``user``,
    everything under ``folder``; no cgroup, accounting or MPI plugin: processes are tracked by
    their parent pids."""
    return "\n".join(
        [
            "ClusterName=grading",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={folder}/munge/socket",
            "CredType=cred/munge",
            f"StateSaveLocation={folder}/state",
            f"SlurmdSpoolDir={folder}/spool",
            f"SlurmctldPidFile={folder}/slurmctld.pid",
            f"SlurmdPidFile={folder}/slurmd.pid",
            f"SlurmctldLogFile={folder}/slurmctld.log",
            f"SlurmdLogFile={folder}/slurmd.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
            "PartitionName=grading Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


@dataclass
class Node:
    folder: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def logs(self) -> str:
        """The last lines of every daemon's log and output, for a failure message."""
        said = []
        for name in sorted(self.folder.glob("*.log")) + sorted(self.folder.glob("*.out")):
            lines = name.read_text(errors="replace").splitlines()[-15:]
            said.append(f"--- {name.name}\n" + "\n".join(lines))
        return "\n".join(said)

    def jobs(self) -> list[str]:
        """The node's queue: one line per pending or running job (``squeue``)."""
        result = subprocess.run(["squeue", "--noheader", "--format=%i %T %R"], env=self.env,
                                capture_output=True, text=True, timeout=30)  # fmt: skip
        if result.returncode != 0:
            raise SlurmMissing(f"squeue failed: {result.stderr.strip()}\n{self.logs()}")
        return result.stdout.split("\n")[:-1]

    def wait_idle(self, seconds: float) -> None:
        """Wait until no job is queued or running; TimeoutError with the queue and the logs."""
        deadline = time.monotonic() + seconds
        while self.jobs():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Slurm jobs still queued after {seconds:g} s: "
                                   f"{self.jobs()}\n{self.logs()}")  # fmt: skip
            time.sleep(1)


def _start(node: Node, name: str, command: list[str]) -> None:
    output = (node.folder / f"{name}.out").open("w")
    node.processes[name] = subprocess.Popen(
        command, stdout=output, stderr=subprocess.STDOUT, env=node.env, cwd=node.folder
    )
    output.close()


@contextlib.contextmanager
def one_node(folder: Path, cpus: int = 2, timeout: float = 30.0) -> Iterator[Node]:
    """munged, slurmctld and slurmd for one node, in the foreground, stopped on exit."""
    missing = [name for name in (*DAEMONS, "sbatch", "squeue") if shutil.which(name) is None]
    if missing:
        raise SlurmMissing(f"{', '.join(missing)} not installed; `make slurm` installs them")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    for name in ("state", "spool", "munge"):
        (folder / name).mkdir(exist_ok=True)
    (folder / "munge").chmod(0o755)
    key = folder / "munge" / "key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(config(folder, host, cpus, pwd.getpwuid(os.getuid()).pw_name))
    node = Node(folder, os.environ | {"SLURM_CONF": str(conf)})
    munge = folder / "munge"
    try:
        _start(node, "munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                                f"--socket={munge}/socket", f"--pid-file={munge}/pid",
                                f"--log-file={munge}/log", f"--seed-file={munge}/seed"])  # fmt: skip
        _start(node, "slurmctld", ["slurmctld", "-D", "-f", str(conf)])
        _start(node, "slurmd", ["slurmd", "-D", "-f", str(conf), "-N", host])
        deadline = time.monotonic() + timeout
        while True:
            dead = [n for n, p in node.processes.items() if p.poll() is not None]
            if dead:
                raise SlurmMissing(f"{', '.join(dead)} stopped at start:\n{node.logs()}")
            state = subprocess.run(["sinfo", "--noheader", "--format=%T"], env=node.env,
                                   capture_output=True, text=True, timeout=30)  # fmt: skip
            if state.stdout.strip() == "idle":
                break
            if time.monotonic() > deadline:
                raise SlurmMissing(f"the node is not idle after {timeout:g} s ({state.stdout}"
                                   f"{state.stderr}):\n{node.logs()}")  # fmt: skip
            time.sleep(0.5)
        yield node
    finally:
        if node.processes.get("slurmctld") and node.processes["slurmctld"].poll() is None:
            # no job of this cluster may outlive it (scancel reaches only this SLURM_CONF's)
            subprocess.run(["scancel", "--user", str(os.getuid())], env=node.env,
                           capture_output=True, timeout=30)  # fmt: skip
        for name in reversed(DAEMONS):  # slurmd first: it may still run a job's processes
            process = node.processes.get(name)
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
