"""nanoGPT's pattern: batches sampled with `torch.randint` from the global generator, seeded at start-up.

    python -B verify_resume.py --output runs/reseed \
        --train-cmd "python -B tests/trainers/corpus/reseed_on_resume.py --bug reseed"

There is no data order to save: each batch is drawn with replacement from torch's global
generator, which also draws the dropout masks. The correct loop saves that generator's state
and restores it last.

Bug `reseed`: like nanoGPT's train.py, the checkpoint holds model, optimizer and step but no
random state; every process calls `torch.manual_seed(1337)` at start-up, so the resumed run
replays the first batches and masks. True cause: `rng-torch` (the rows differ, but they are a
function of the generator only). Parts: model, optimizer, rng-torch.
"""

import _corpus
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("reseed",))
kit.configure_torch()

x, y = _corpus.regression(32)
torch.manual_seed(1337)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.GELU(), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.03, betas=(0.9, 0.95), weight_decay=0.1)
gens = kit.Generators(torch=torch.default_generator)
iter_num, history = 0, []

if args.resume:
    checkpoint = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer)):
        if part not in args.omit:
            thing.load_state_dict(checkpoint[part])
    iter_num, history = checkpoint["iter_num"], checkpoint["history"]
    if flags.bug is None and "rng-torch" not in args.omit:
        gens.restore(checkpoint["rng"])

for _ in range(args.steps):
    ix = torch.randint(len(x), (4,))
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x[ix]), y[ix])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    iter_num += 1
    history.append(kit.record(iter_num, ix.tolist(), lr, loss.item()))

args.output.mkdir(parents=True)
checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num}
if flags.bug is None:
    checkpoint["rng"] = gens.state()
kit.save_checkpoint(args.output / "checkpoint.pt", checkpoint | {"history": history})
kit.write_summary(
    args.output,
    step=iter_num,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
