"""Fault: no randomness at all, so the negative control (resume without RNG restore) cannot diverge.

A correct protocol trainer otherwise: full-batch gradient descent on a fixed least-squares problem
in float64, with a decaying lr and no generator anywhere. Its full resume is concordant, and so is
its resume without RNG restore: the verifier must report the negative control undetected (exit 1).
"""

import os

os.environ.update(OMP_NUM_THREADS="1")

import hashlib
import io

import torch
from _protocol_files import PROTOCOL, make_output, parse_args, write_checkpoint, write_summary

X = torch.tensor([[1.0, 2.0], [2.0, -1.0], [0.5, 0.5], [-1.0, 3.0], [3.0, 1.0], [0.0, -2.0]], dtype=torch.float64)
Y = X @ torch.tensor([0.7, -1.3], dtype=torch.float64) + 0.25
ROWS = list(range(len(X)))


def lr_at(done: int) -> float:
    """The lr of the update that follows `done` updates."""
    return 0.05 * 0.9**done


def load(path):
    data = path.read_bytes()
    recorded = (path.parent / f"{path.name}.sha256").read_text(encoding="ascii").split()[0]
    if hashlib.sha256(data).hexdigest() != recorded:
        raise SystemExit(f"{path}: sha256 does not match its sidecar")
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    return state["w"], state["b"], state["step"], state["history"]


def main() -> None:
    args = parse_args()
    if args.output.exists():  # checked first, so that a refused run leaves nothing behind
        raise SystemExit(f"--output {args.output}: already exists")
    torch.set_num_threads(1)
    if args.resume is None:
        w, b, step, history = torch.zeros(2, dtype=torch.float64), torch.zeros((), dtype=torch.float64), 0, []
    else:
        w, b, step, history = load(args.resume)  # --omit-rng-restore: there is no generator to omit
    for _ in range(args.steps):
        lr = lr_at(step)
        error = X @ w + b - Y
        loss = (error**2).mean()
        w, b = w - lr * 2 * X.T @ error / len(X), b - lr * 2 * error.mean()
        step += 1
        history.append({"step": step, "rows": ROWS, "lr": lr, "loss": loss.item()})

    make_output(args.output)
    buffer = io.BytesIO()
    torch.save({"w": w, "b": b, "step": step, "history": history}, buffer)
    write_checkpoint(args.output, buffer.getvalue())
    predictions = X @ w + b
    summary = {
        "protocol": PROTOCOL,
        "step": step,
        "history": history,
        "state": {"w": w.tolist(), "b": b.item()},
        "next": {"lr": lr_at(step)},
        "eval": {"mse": ((predictions - Y) ** 2).mean().item(), "predictions": predictions.tolist()},
        "meta": {"threads": torch.get_num_threads(), "dtype": "float64", "device": "cpu"},
    }
    write_summary(args.output, summary)


if __name__ == "__main__":
    main()
