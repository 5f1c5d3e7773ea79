"""Reliability under torchrun: SIGKILL one rank of a DDP run at many seeded instants; nothing may be lost.

    python -B -m benchmarks.chaos_torchrun [--kills 50] [--steps 120] [--world 2] [--seed 0]

Runs `verify_resume.py chaos --kill rank` on `torchrun --standalone --nproc-per-node W --max-restarts
KILLS train.py`: torchrun restarts the whole group after each kill, the group resumes in place from
the newest complete DCP checkpoint. Prints what landed where (training, or inside a DCP save), the
group starts, the replayed steps and the checks. This prints figures; the short run in
tests/e2e/test_distributed.py is the test.
"""

import shlex
from collections import Counter

import click

from benchmarks.helpers import REPO, TORCHRUN, print_checks, run_chaos


@click.command()
@click.option("--kills", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--steps", type=click.IntRange(min=2), default=120, show_default=True)
@click.option("--world", type=click.IntRange(min=1), default=2, show_default=True, help="Processes per launch.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def main(kills: int, steps: int, world: int, checkpoint_every: int, seed: int) -> None:
    torchrun = [*TORCHRUN, "--nproc-per-node", str(world)]
    train = shlex.join([*torchrun, "--max-restarts", str(kills + 1), str(REPO / "train.py")])
    args = ["--kill", "rank", "--kills", str(kills), "--steps", str(steps), "--seed", str(seed), "--train-cmd", train]
    code, elapsed, doc = run_chaos([*args, "--checkpoint-every", str(checkpoint_every)])
    ranks = Counter(k["rank"] for k in doc["kills"])
    print(f"torchrun chaos: {kills} SIGKILLs of one of {world} ranks, {steps} steps, every {checkpoint_every} saved")
    print(f"  seed {seed}: exit {code} in {elapsed:.0f} s ({elapsed / max(1, kills):.1f} s per kill)")
    print(f"  landed: {doc['kills_by_phase']}; ranks killed: {dict(sorted(ranks.items()))}")
    print(
        f"  group starts {doc['trainer_starts']}, steps replayed {doc['replayed_steps']}, broken log lines "
        f"{doc['broken_log_lines']}"
    )
    print_checks(doc)


if __name__ == "__main__":
    main()
