"""A protocol trainer whose data mapping can be built anew, and differently, by every process: a resume then loads
weights trained under one mapping into a process that uses another.

    env -u PYTHONHASHSEED python -B verify_resume.py --output runs/per-process --faults all \\
        --train-cmd "python -B tests/trainers/per_process_data.py --bug vocabulary"

A text classifier in float64 (tests/trainers/_vocab.py): 32 sentences of a 38-word lexicon, six topics named by
strings, each sentence a bag of word and word-piece ids; `EmbeddingBag(mean)`, dropout (torch's generator), a
Linear head; cross-entropy, Adam, 8 sentences an update in an order a NumPy Generator shuffles every epoch. Parts:
model, optimizer, data, rng-numpy, rng-torch, progress; `--omit=PART` and `--omit-rng-restore` as the protocol says.

`--bug NAME` builds one mapping from a `set` of strings, whose order Python's per-process hash seed decides
(PYTHONHASHSEED unset, as Python runs by default); every part is still restored exactly:
- `vocabulary`: the vocabulary is `list(set(words))`. True cause: each word's id differs per process, so the
  resumed model averages other embedding rows for the same sentence.
- `labels`: the topics are numbered by enumerating `set(topics)`. True cause: each sentence's target differs per
  process (its inputs do not), so the resumed head trains other rows toward other topics.
- `merges`: the word-piece merges are learned from pair counts filled while iterating `set(words)`. True cause: the
  ties between equal counts are broken by that order, so the merges, the pieces and their ids differ per process.
Every fresh process maps differently, the continuous run and its repeat included: the interrupted run is no prefix
of the continuous one, and only the mapping (no part) explains it.
"""

import argparse

import _vocab
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-numpy", "rng-torch", "progress")
BATCH = 8
parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--bug", choices=_vocab.BUGS, help="Build this mapping from a set: another one per process.")
own = parser.parse_args()
try:
    args = kit.flags.from_namespace(own, PARTS)
except kit.ResumeproofError as err:
    parser.error(str(err))
kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
kit.configure_torch()  # one thread, float64, deterministic algorithms

data = _vocab.encode(own.bug)  # the mapping: correct, the same in every process; with a bug, this process's own
torch.manual_seed(0)
model = _vocab.BagClassifier(data.rows, len(_vocab.TOPICS))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)  # Dropout draws from torch's
order = kit.ShuffledOrder.fresh(len(data.bags), gens["numpy"])
step, history = 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)  # its sha256 sidecar, then torch.load(weights_only=True)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    if "progress" not in args.omit:
        step, history = state["step"], state["history"]
    gens.restore(state["rng"], args.restored_generators(gens.names))  # last: nothing may draw before the loop

for _ in range(args.steps):
    rows = order.take(BATCH, gens["numpy"])
    ids, offsets, targets = _vocab.batch(data, rows)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(ids, offsets), targets)
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
kit.save_checkpoint(args.output / "checkpoint.pt", state | {"rng": gens.state(), "step": step, "history": history})
with torch.no_grad():  # evaluation draws nothing: no dropout mask
    ids, offsets, targets = _vocab.batch(data, list(range(len(data.bags))))
    logits = model.eval()(ids, offsets)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state=state,
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={
        "loss": torch.nn.functional.cross_entropy(logits, targets).item(),
        "accuracy": (logits.argmax(1) == targets).double().mean().item(),
    },
    meta=args.meta() | {"bug": own.bug},
)
