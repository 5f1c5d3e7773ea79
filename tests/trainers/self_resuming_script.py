"""A plain loop that survives a Slurm preemption by itself, written with no thought of resumeproof: it resumes from
the newest checkpoint in its own folder, and on SIGTERM (a requeue's) or its --requeue-on signal (the job's
`--signal`) it finishes the iteration, whose checkpoint it writes, and exits; on the signal it first has Slurm
requeue its job. `resumeproof verify --observe --launcher slurm --preempt signal|requeue` verifies it
(tests/e2e/test_preempt_script.py):

    resumeproof verify --observe --launcher slurm --preempt signal --output runs/self-resuming \\
      --train-cmd  "python -B tests/trainers/self_resuming_script.py --iters {steps} --out {run} --requeue-on USR1" \\
      --resume-cmd "python -B tests/trainers/self_resuming_script.py --iters {steps} --out {run} \\
                    --resume {checkpoint}" \\
      --checkpoint "{run}/ckpt_{step}.pt"

Float64: a two-layer regression net with dropout (torch's global generator), SGD with momentum, batches of 8 from
a per-epoch permutation of 64 rows that a torch Generator of its own draws. After every iteration it writes
`{out}/ckpt_{iter}.pt` (model, optimizer, iteration, the epoch's permutation and cursor, both generators).

Flags: `--iters N`, `--out DIR`, `--resume CKPT` (else the newest `DIR/ckpt_*.pt`, if any), `--requeue-on SIG`, and
`--bug NAME`, each silent and each only where a job Slurm restarted resumes (SLURM_RESTART_COUNT set):
- `rng`: the global generator is not set back. True cause: dropout draws other masks after the restart.
- `epoch`: the epoch's cursor is not set back. True cause: the restart begins its epoch again, feeding the first
  batches of the permutation a second time.
- `counter`: the iteration count comes back one behind the weights, as where the checkpoint is written inside the
  signal handler, after the step and before the count. True cause: the restart makes one update more than was left,
  each the continuous run's.
- `new-folder`: the restart writes into a folder of its own (`DIR-restart-N`), as where each launch gets a new one.
  True cause: it finds no checkpoint there and starts over from iteration 0.
- `no-requeue`: the signal stops the run, and nothing requeues the job. True cause: the job ends, never restarted.
"""

import argparse
import os
import signal
import subprocess
import time
from pathlib import Path

import torch

p = argparse.ArgumentParser(description="Fit a toy regression; checkpoint every iteration; survive a preemption.")
p.add_argument("--iters", type=int, default=10, help="iterations in all")
p.add_argument("--out", required=True, help="where ckpt_{iter}.pt goes, and what a restart resumes from")
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from (default: the newest in --out)")
p.add_argument("--requeue-on", default=None, help="a signal (USR1) on which to stop and requeue the Slurm job")
p.add_argument("--bug", choices=("rng", "epoch", "counter", "new-folder", "no-requeue"), help="restart with this bug")
args = p.parse_args()

restarted = bool(os.environ.get("SLURM_RESTART_COUNT"))
bug = args.bug if restarted or args.bug == "no-requeue" else None
out = Path(f"{args.out}-restart-{os.environ['SLURM_RESTART_COUNT']}" if bug == "new-folder" else args.out)
out.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(7)

stop: list[str] = []  # the signal that asked the run to stop, once one did
signal.signal(signal.SIGTERM, lambda signum, frame: stop.append("SIGTERM"))
if args.requeue_on:
    signal.signal(signal.Signals[f"SIG{args.requeue_on}"], lambda signum, frame: stop.append(args.requeue_on))

x = torch.randn(64, 4)
y = (x @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.1 * torch.randn(64)).unsqueeze(1)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
shuffle = torch.Generator().manual_seed(11)
done, order, cursor = 0, torch.randperm(64, generator=shuffle), 0

saved = sorted(out.glob("ckpt_*.pt"), key=lambda f: int(f.stem.split("_")[1]))
resume = args.resume or (str(saved[-1]) if saved else None)
if resume:
    ckpt = torch.load(resume, weights_only=True)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    done, order = ckpt["iter"] - (bug == "counter"), ckpt["order"]
    cursor = 0 if bug == "epoch" else ckpt["cursor"]
    shuffle.set_state(ckpt["shuffle"])
    if bug != "rng":
        torch.set_rng_state(ckpt["rng"])

for it in range(done, args.iters):
    if cursor + 8 > len(order):
        order, cursor = torch.randperm(64, generator=shuffle), 0
    rows = order[cursor : cursor + 8]
    cursor += 8
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter": it + 1, "order": order}
    state |= {"cursor": cursor, "shuffle": shuffle.get_state(), "rng": torch.get_rng_state()}
    torch.save(state, out / f"ckpt_{it + 1}.pt")
    print(f"iter {it + 1} loss {loss.item():.6f}", flush=True)
    if stop:
        break

if stop and stop[0] == args.requeue_on and bug != "no-requeue":
    subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]], check=True)
    deadline = time.monotonic() + 30  # the requeue's SIGTERM, taken here rather than in the interpreter's shutdown
    while "SIGTERM" not in stop and time.monotonic() < deadline:
        time.sleep(0.05)
