"""Fault: a careful loop that is exact mid-epoch and one shuffle behind at an epoch boundary.

It saves the shuffle generator's state as it was when the current epoch's permutation was drawn,
with the position in the epoch, and on resume redraws that permutation and skips the batches
already taken: exact mid-epoch. A checkpoint written right after an epoch's last batch holds
position "end of epoch e"; the resume turns it into "start of epoch e + 1" but redraws from the
saved state, so epoch e + 1 replays epoch e's order (the RandomSampler pattern: its permutation is
drawn when an epoch's iterator starts). Passes at k = 5 (mid-epoch), fails at the boundary k = 6.
"""

import _tiny
import numpy as np
import torch

from resumeproof import kit

args = kit.flags.parse(parts=("model", "optimizer", "data", "rng-shuffle", "rng-torch"))
kit.refuse_existing(args.output)
kit.configure_torch()
x, y = _tiny.data(24)
model = _tiny.model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(shuffle=np.random.default_rng(0), torch=torch.default_generator)
epoch_start = gens.state()["shuffle"]  # the shuffle generator's state when this epoch's order was drawn
order, cursor, step, history = gens["shuffle"].permutation(24).tolist(), 0, 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    step, history = state["step"], state["history"]
    if "data" not in args.omit:
        cursor, epoch_start = state["cursor"], state["epoch_start"]
        if cursor == 24:
            cursor = 0  # "the next epoch starts": the bug, it redraws from the saved state below
        gens.restore({"shuffle": epoch_start}, ["shuffle"])
        order = gens["shuffle"].permutation(24).tolist()
    gens.restore(state["rng"], args.restored_generators(gens.names))

for _ in range(args.steps):
    if cursor == 24:
        epoch_start, cursor = gens.state()["shuffle"], 0
        order = gens["shuffle"].permutation(24).tolist()
    rows, cursor = order[cursor : cursor + 4], cursor + 4
    _, loss = _tiny.update(model, optimizer, x, y, rows)
    step += 1
    history.append(kit.record(step, rows, 0.05, loss))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": gens.state()}
state |= {"cursor": cursor, "epoch_start": epoch_start, "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", state)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "cursor": cursor},
    next={"lr": 0.05, "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=args.meta(),
)
