"""A correct trainer whose checkpoint is a directory, as a framework's save_state writes one.

`checkpoint.pt/` holds weights in safetensors form, the optimizer and scheduler as torch.save
archives, the generator states as a torch.save of NumPy arrays (a pickle that needs NumPy's
globals: the verifier refuses it unless allowed by name), the progress as JSON and a note as
text. `--variant` breaks it on purpose: `extra-file` adds a file after the sidecar was written,
`writes-input` touches its resumed input, `pickle-only` drops every file but the unsafe pickle.
"""

import argparse
import json
import struct

import _tiny
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch")
parser = argparse.ArgumentParser(allow_abbrev=False)
parser.add_argument("--variant", choices=("extra-file", "writes-input", "pickle-only"))
kit.flags.add_arguments(parser, PARTS)
namespace = parser.parse_args()
args = kit.flags.from_namespace(namespace, PARTS)
kit.refuse_existing(args.output)
kit.configure_torch()

x, y = _tiny.data(16)
model = _tiny.model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        blob = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def read_safetensors(path):
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8 : 8 + size]), data[8 + size :]
    return {
        name: torch.from_numpy(np.frombuffer(body[a:b], dtype=np.float64).copy()).reshape(entry["shape"])
        for name, entry in header.items()
        for a, b in [entry["data_offsets"]]
    }


if args.resume:
    folder = kit.load_checkpoint_dir(args.resume)  # every file against the sidecar first
    if "model" not in args.omit:
        model.load_state_dict(read_safetensors(folder / "model.safetensors"))
    for part, thing in (("scheduler", scheduler), ("optimizer", optimizer)):
        if part not in args.omit:
            thing.load_state_dict(torch.load(folder / f"{part}.pt", weights_only=True))
    progress = json.loads((folder / "progress.json").read_text())
    step, history = progress["step"], progress["history"]
    if "data" not in args.omit:
        order.load_state_dict({**progress["order"], "permutation": torch.tensor(progress["order"]["permutation"])})
    rng = torch.load(folder / "rng.pkl", weights_only=False)  # the framework's own (unsafe) way, allowed by name
    state = {"numpy": rng["numpy"], "torch": torch.from_numpy(rng["torch"])}
    gens.restore(state, args.restored_generators(gens.names))
    if namespace.variant == "writes-input":
        (folder / "notes.txt").write_text("touched by the resume\n")

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr, loss = _tiny.update(model, optimizer, x, y, rows, scheduler)
    step += 1
    history.append(kit.record(step, rows, lr, loss))


def fill(folder):
    if namespace.variant != "pickle-only":
        write_safetensors(folder / "model.safetensors", model.state_dict())
        torch.save(optimizer.state_dict(), folder / "optimizer.pt")
        torch.save(scheduler.state_dict(), folder / "scheduler.pt")
        order_state = {**order.state_dict(), "permutation": order.permutation}
        (folder / "progress.json").write_text(json.dumps({"step": step, "history": history, "order": order_state}))
        (folder / "notes.txt").write_text("a checkpoint directory\n")
    rng = gens.state()
    torch.save({"numpy": rng["numpy"], "torch": rng["torch"].numpy()}, folder / "rng.pkl")  # NumPy arrays: unsafe


args.output.mkdir(parents=True)
kit.save_checkpoint_dir(args.output / "checkpoint.pt", fill)
if namespace.variant == "extra-file":
    (args.output / "checkpoint.pt" / "stray.bin").write_bytes(b"\x00\x01")
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=args.meta(),
)
