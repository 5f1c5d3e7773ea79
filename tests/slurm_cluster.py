"""A real Slurm cluster of two nodes on this machine, from Debian's packages, for the tests that submit to Slurm.

    python -B -m tests.slurm_cluster start DIR   # prints SLURM_CONF=DIR/slurm.conf (benchmarks/launcher_overhead.py)
    python -B -m tests.slurm_cluster stop DIR

munged, slurmctld and two slurmd (`n1`, `n2`, both at 127.0.0.1 on ports of their own) run as root with their key,
sockets, state, spool and logs in one temporary folder, and end by their pids. The nodes' names do not resolve: that
is what a node's `NodeAddr` is for, and what multi-node rendezvous must cope with. `cred_expire` is lowered so that a
requeued job waits seconds, not Slurm's default 120 s, before it may start again. Accounting is off (no slurmdbd):
`sacct` answers nothing, as on a small cluster without a database, so the launcher reads states from `squeue`.
"""

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import free_ports

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
NODES = ("n1", "n2")
CPUS_PER_NODE = 4  # more than the machine has (SlurmdParameters=config_overrides): jobs share its 2 cores
KILL_WAIT = 5  # seconds between a requeue's or a cancel's SIGTERM and its SIGKILL (Slurm's default is 30)
CRED_EXPIRE = 10  # seconds a requeued job is held before it may start again (Slurm's default is 120)
UP_WITHIN = 60.0


@dataclass(frozen=True)
class Cluster:
    folder: Path
    conf: Path

    @property
    def env(self) -> dict[str, str]:
        """What a client (sbatch, squeue, scontrol, submitit) needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def command(self, *argv: str) -> str:
        """A Slurm client's output against this cluster."""
        env = {**os.environ, **self.env}
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60).stdout


def why_not() -> str | None:
    """Why no cluster can be started here (None: it can, once the packages are installed)."""
    if os.geteuid() != 0:
        return "the daemons run as root"
    if shutil.which("slurmctld", path=_SBIN) is None and shutil.which("apt-get") is None:
        return "Slurm is not installed and there is no apt-get to install it"
    return None


_SBIN = f"/usr/sbin:/usr/bin:{os.environ.get('PATH', '')}"


def install(lock: Path) -> None:
    """Debian's Slurm and munge, where they are missing (one installer at a time across the test workers)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if all(shutil.which(daemon, path=_SBIN) for daemon in ("slurmctld", "slurmd", "munged", "sbatch")):
            return
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        argv = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
        if subprocess.run(argv, env=env, capture_output=True, timeout=900).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=True, timeout=900)
            subprocess.run(argv, env=env, capture_output=True, check=True, timeout=900)


def start(folder: Path) -> Cluster:
    """munged, slurmctld and the two slurmd, up and idle."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state").mkdir()
    for node in NODES:
        (folder / "spool" / node).mkdir(parents=True)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge = [f"--key-file={key}", f"--socket={folder / 'munge.socket'}", f"--pid-file={folder / 'munged.pid'}"]
    _daemon("munged", "--force", *munge, f"--log-file={folder / 'munged.log'}", f"--seed-file={folder / 'seed'}")
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, free_ports(1 + len(NODES))))
    cluster = Cluster(folder, conf)
    _daemon("slurmctld", "-f", str(conf))
    for node in NODES:
        _daemon("slurmd", "-f", str(conf), "-N", node)
    _until_idle(cluster)
    return cluster


def stop(cluster: Cluster) -> None:
    """Every job cancelled, then every daemon ended by its pid."""
    subprocess.run(["scancel", "--full", "--user", "root"], env={**os.environ, **cluster.env}, capture_output=True)
    pids = sorted(cluster.folder.glob("*.pid"), key=lambda pid: pid.name == "munged.pid")  # munge last
    for pidfile in pids:
        with contextlib.suppress(ValueError, ProcessLookupError, FileNotFoundError):  # never started, or gone
            os.kill(int(pidfile.read_text()), signal.SIGTERM)


def _conf(folder: Path, ports: list[int]) -> str:
    host = socket.gethostname()
    nodes = "\n".join(
        f"NodeName={node} NodeAddr=127.0.0.1 NodeHostname={host} Port={port} CPUs={CPUS_PER_NODE} State=UNKNOWN"
        for node, port in zip(NODES, ports[1:], strict=True)
    )
    return f"""\
ClusterName=resumeproof
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder / "munge.socket"},cred_expire={CRED_EXPIRE}
StateSaveLocation={folder / "state"}
SlurmdSpoolDir={folder / "spool"}/%n
SlurmctldPidFile={folder / "slurmctld.pid"}
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder / "slurmctld.log"}
SlurmdLogFile={folder}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait={KILL_WAIT}
{nodes}
PartitionName=debug Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
"""


def _daemon(name: str, *args: str) -> None:
    """Start one daemon (it forks into the background itself); its own error when it cannot."""
    path = shutil.which(name, path=_SBIN)
    assert path is not None, f"{name} is not installed"
    done = subprocess.run([path, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{name} did not start: {done.stderr.strip()}"


def _until_idle(cluster: Cluster) -> None:
    deadline = time.monotonic() + UP_WITHIN
    while time.monotonic() < deadline:
        try:
            states = cluster.command("sinfo", "-h", "-N", "-o", "%N %t").split()
        except subprocess.CalledProcessError:
            states = []
        if states.count("idle") == len(NODES):
            return
        time.sleep(0.5)
    logs = "".join(log.read_text()[-1000:] for log in sorted(cluster.folder.glob("*.log")))
    raise AssertionError(f"the Slurm cluster in {cluster.folder} was not idle within {UP_WITHIN:g} s:\n{logs}")


if __name__ == "__main__":
    import sys

    verb, where = sys.argv[1], Path(sys.argv[2]).resolve()
    if verb == "start":
        install(Path("/tmp/resumeproof-slurm-install.lock"))
        print(f"SLURM_CONF={start(where).conf}")
    else:
        stop(Cluster(where, where / "slurm.conf"))
