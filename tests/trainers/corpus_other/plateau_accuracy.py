"""A classifier whose learning rate halves when validation accuracy stops improving (ReduceLROnPlateau, mode max).

    python -B verify_resume.py --output runs/plateau-acc \
        --train-cmd "python -B tests/trainers/corpus_other/plateau_accuracy.py --bug fresh-scheduler"

No resumeproof (tests/trainers/corpus_other/_plain.py); a `main()` in the style of the ImageNet example: the model
is evaluated on a fixed validation set after every update and `scheduler.step(acc)` is given the accuracy, with
patience 1. The summary reports the plateau counters a user logs (`best`, `num_bad_epochs`, `cooldown_counter`),
and `best_acc`, kept for model selection.

Bug `fresh-scheduler`: the scheduler is not saved ("the lr is in the optimizer's state"); the resumed run's
scheduler starts with no best and no bad update counted. It is self-correcting: when the accuracy reaches its best
again the counters are the continuous run's, and at the end they are equal; but the continuous run halved the lr
at update 6 and 8 and the resumed one did not. True cause: `sched`. Parts: net, opt, sched, data (the epoch's
permutation, the position and the shuffling generator), rng-torch (dropout).
"""

import _plain
import torch
from torch import nn

PARTS = ("net", "opt", "sched", "data", "rng-torch")


def make_data(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g)
    logits = x[:, 0] - 0.7 * x[:, 1] + 0.3 * x[:, 0] * x[:, 1]
    return x, (logits + 0.3 * torch.randn(n, generator=g) > 0).long()


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).double().mean().item()


def main() -> None:
    args = _plain.get_args(__doc__, PARTS, bugs=("fresh-scheduler",))
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)

    x_train, y_train = make_data(1, 32)
    x_val, y_val = make_data(2, 20)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=1, threshold=0)
    shuffle = torch.Generator().manual_seed(1)
    perm, pos, best_acc, step, history = None, len(x_train), 0.0, 0, []

    if args.resume:
        checkpoint = _plain.load(args.resume)
        if _plain.restore(args, "net"):
            model.load_state_dict(checkpoint["state_dict"])
        if _plain.restore(args, "opt"):
            optimizer.load_state_dict(checkpoint["optimizer"])
        if _plain.restore(args, "sched") and args.bug is None:
            scheduler.load_state_dict(checkpoint["scheduler"])
        if _plain.restore(args, "data"):
            perm, pos = checkpoint["perm"], checkpoint["pos"]
            shuffle.set_state(checkpoint["shuffle"])
        if _plain.restore(args, "rng-torch"):
            torch.set_rng_state(checkpoint["rng"])
        best_acc, step, history = checkpoint["best_acc"], checkpoint["step"], checkpoint["history"]

    for _ in range(args.steps):
        if pos >= len(x_train):
            perm, pos = torch.randperm(len(x_train), generator=shuffle), 0
        rows = perm[pos : pos + 8]
        pos += 8
        lr = optimizer.param_groups[0]["lr"]
        model.train()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x_train[rows]), y_train[rows])
        loss.backward()
        optimizer.step()
        acc = accuracy(model, x_val, y_val)
        scheduler.step(acc)
        best_acc = max(best_acc, acc)
        step += 1
        history.append({"step": step, "rows": rows.tolist(), "lr": lr, "loss": loss.item(), "val_acc": acc})

    checkpoint = {
        "step": step,
        "state_dict": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "best_acc": best_acc,
        "perm": perm,
        "pos": pos,
        "shuffle": shuffle.get_state(),
        "rng": torch.get_rng_state(),
        "history": history,
    }
    if args.bug is None:
        checkpoint["scheduler"] = scheduler.state_dict()
    _plain.save(checkpoint, args.output / "checkpoint.pt")
    plateau = {k: getattr(scheduler, k) for k in ("best", "num_bad_epochs", "cooldown_counter")}
    _plain.write_summary(
        args,
        PARTS,
        step=step,
        history=history,
        state={"net": model.state_dict(), "opt": optimizer.state_dict(), "plateau": plateau, "best_acc": best_acc},
        next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "shuffle": _plain.peek(shuffle)}},
        eval={"val_acc": accuracy(model, x_val, y_val), "train_acc": accuracy(model, x_train, y_train)},
    )


if __name__ == "__main__":
    main()
