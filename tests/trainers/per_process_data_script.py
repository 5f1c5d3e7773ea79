"""A text-classification script in nanoGPT's style, written with no thought of resumeproof, whose data mapping can be
built anew, and differently, by every process: `resumeproof verify --observe` verifies it.

    env -u PYTHONHASHSEED resumeproof verify --observe --output runs/per-process-script \\
      --train-cmd  "python -B tests/trainers/per_process_data_script.py --iters {steps} --out {run} --bug labels" \\
      --resume-cmd "python -B tests/trainers/per_process_data_script.py --iters {steps} --out {run} \\
                    --resume {checkpoint} --bug labels" \\
      --checkpoint "{run}/ckpt_{step}.pt"

Float64 (tests/trainers/_vocab.py): 32 sentences of a 38-word lexicon, six topics named by strings, each sentence
a bag of word and word-piece ids; `EmbeddingBag(mean)`, dropout (torch's global generator), a Linear head;
`nn.CrossEntropyLoss()`, Adam, batches of 8 from a per-epoch permutation that a NumPy Generator of its own draws. It
writes `{out}/ckpt_{iter}.pt` after every iteration (model, optimizer, iter, the epoch's permutation and cursor,
both generators) and resumes all of it, the generators last.

Flags: `--iters N`, `--out DIR`, `--resume CKPT`, and `--bug NAME`, which builds one mapping from a `set` of
strings, whose order Python's per-process hash seed decides (PYTHONHASHSEED unset, as Python runs by default):
- `vocabulary`: the vocabulary is `list(set(words))`. True cause: each word's id differs per process, so the
  resumed model averages other embedding rows for the same sentence.
- `labels`: the topics are numbered by enumerating `set(topics)`. True cause: each sentence's target differs per
  process (the model's inputs do not), so the resumed head trains other rows toward other topics.
- `merges`: the word-piece merges are learned from pair counts filled while iterating `set(words)`. True cause: the
  ties between equal counts are broken by that order, so the merges, the pieces and their ids differ per process.
"""

import argparse
import os

import _vocab
import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser(description="Train a toy topic classifier; checkpoint after every iteration.")
p.add_argument("--iters", type=int, default=10, help="iterations in all")
p.add_argument("--out", required=True, help="where ckpt_{iter}.pt goes")
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from")
p.add_argument("--bug", choices=_vocab.BUGS, help="build this mapping from a set")
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1337)
os.makedirs(args.out, exist_ok=True)
batch_size = 8

data = _vocab.encode(args.bug)
shuffle = np.random.default_rng(1337)  # the data order's own generator
perm, cursor = shuffle.permutation(len(data.bags)), 0


def get_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    global perm, cursor
    if cursor == len(perm):  # a new epoch
        perm, cursor = shuffle.permutation(len(data.bags)), 0
    rows = perm[cursor : cursor + batch_size].tolist()
    cursor += batch_size
    return _vocab.batch(data, rows)


model = _vocab.BagClassifier(data.rows, len(_vocab.TOPICS))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()

iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    perm, cursor = checkpoint["perm"].numpy(), checkpoint["cursor"]
    iter_num = checkpoint["iter"]
    torch.set_rng_state(checkpoint["rng"]["torch"])  # last: nothing may draw before the first iteration
    shuffle.bit_generator.state = checkpoint["rng"]["numpy"]

model.train()
while iter_num < args.iters:
    ids, offsets, targets = get_batch()
    loss = criterion(model(ids, offsets), targets)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "iter": iter_num,
        "perm": torch.from_numpy(perm),
        "cursor": cursor,
        "rng": {"torch": torch.get_rng_state(), "numpy": shuffle.bit_generator.state},
    }
    torch.save(checkpoint, os.path.join(args.out, f"ckpt_{iter_num}.pt"))
    print(f"iter {iter_num}: loss {loss.item():.9g}")
