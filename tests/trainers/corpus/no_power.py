"""Full-batch training with dropout switched on late: the generator is seeded, then untouched for a while.

    python -B verify_resume.py --output runs/late-dropout --train-cmd "python -B tests/trainers/corpus/no_power.py"

Every update uses all rows; the only random draws are dropout's, from torch's default
generator, and only from update `--dropout-from` (default 6) on. Before that the generator
sits in its seeded state, so at k = 5 a resume that does not restore it starts from the very
state a restore would give: the negative control cannot diverge, whatever the checkpoint holds.
This loop is correct (it saves and restores the generator); the verdict at k = 5 is "no power"
(exit 1, nothing lost), and at k = 7 it passes. With `--dropout-from 100` it never draws in
ten updates: no k has power. Parts: model, optimizer, rng-torch.
"""

import _corpus
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "rng-torch")


def options(parser) -> None:
    parser.add_argument("--dropout-from", type=int, default=6, help="The first update that uses dropout.")


args, flags = _corpus.parse(PARTS, __doc__, options=options)
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
hidden, head = torch.nn.Linear(2, 8), torch.nn.Linear(8, 1)
model = torch.nn.ModuleDict({"hidden": hidden, "head": head})
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
gens = kit.Generators(torch=torch.default_generator)
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    h = torch.tanh(hidden(x))
    if step + 1 >= flags.dropout_from:
        h = torch.nn.functional.dropout(h, 0.2, training=True)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(head(h), y)
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, list(range(16)), lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": gens.state()}
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(head(torch.tanh(hidden(x))), y).item()},
    meta=_corpus.meta(args, PARTS),
)
