"""Benchmark: what `--preempt` adds to a verification on a real Slurm (the tests' two-node cluster on this machine:
`python -B -m tests.slurm_cluster start DIR` prints its slurm.conf; `... stop DIR`).

    python -B -m benchmarks.preempt_overhead --slurm-conf DIR/slurm.conf [--repeats 3]

Four sides, each `verify_resume.py --launcher slurm --steps 6 --interrupt-at 3 --jobs 2` of the reference trainer
(a protocol trainer) or of tests/trainers/self_resuming_script.py (`--observe`), without and with `--preempt
signal`; the other way (`requeue`) once each. Besides the whole verification, the preempted job's own seconds
(its trajectory's wall_seconds: the submission, its first start to update 3, the preemption, Slurm's requeue, the
restart to the end) are reported. Runs alternate so that drift in machine load hits every side alike; medians are
reported. This prints figures; it asserts nothing.
"""

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import click

from benchmarks.helpers import PY, timed

ARGS = ["--launcher", "slurm", "--steps", "6", "--interrupt-at", "3", "--jobs", "2"]
LOOP = f"{sys.executable} -B tests/trainers/self_resuming_script.py --iters {{steps}} --out {{run}}"
SCRIPT = [
    "--observe",
    "--train-cmd",
    f"{LOOP} --requeue-on USR1",
    "--resume-cmd",
    f"{LOOP} --resume {{checkpoint}}",
    "--checkpoint",
    "{run}/ckpt_{step}.pt",
]
SIDES = {
    "train.py": [],
    "train.py --preempt signal": ["--preempt", "signal"],
    "train.py --preempt requeue": ["--preempt", "requeue"],
    "script": SCRIPT,
    "script --preempt signal": [*SCRIPT, "--preempt", "signal"],
    "script --preempt requeue": [*SCRIPT, "--preempt", "requeue"],
}
BASELINE = {"train.py --preempt signal": "train.py", "train.py --preempt requeue": "train.py"}
BASELINE |= {"script --preempt signal": "script", "script --preempt requeue": "script"}


@click.command()
@click.option("--slurm-conf", metavar="PATH", required=True, help="A running Slurm's slurm.conf.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Runs of each side.")
def main(slurm_conf: str, repeats: int) -> None:
    env = {**{k: v for k, v in os.environ.items() if k != "RESUMEPROOF_SUBMITIT_CLUSTER"}, "SLURM_CONF": slurm_conf}
    times: dict[str, list[float]] = {name: [] for name in SIDES}
    jobs: dict[str, list[float]] = {name: [] for name in SIDES}
    with tempfile.TemporaryDirectory(prefix="po-") as tmp:
        for i in range(repeats):
            for n, (name, flags) in enumerate(SIDES.items()):
                out = Path(tmp) / f"v-{i}-{n}"
                times[name].append(timed([*PY, "verify_resume.py", "--output", str(out), *ARGS, *flags], env))
                ran = json.loads((out / "verification.json").read_text())["trajectories"].get("preempted")
                jobs[name] += [ran["wall_seconds"]] if ran else []
    for name, runs in times.items():
        median = statistics.median(runs)
        over = f"  (+{median - statistics.median(times[BASELINE[name]]):.2f} s)" if name in BASELINE else ""
        job = f"  the preempted job {statistics.median(jobs[name]):.2f} s" if jobs[name] else ""
        print(f"{name:28} median {median:.2f} s{over}{job}  runs: {', '.join(f'{t:.2f}' for t in runs)}")


if __name__ == "__main__":
    main()
