"""A loop whose parts all have its own names: net, opt, ema, scaler, order and three named generators.

    python -B verify_resume.py --output runs/own --train-cmd "python -B tests/trainers/corpus/own_parts.py" --faults all

None of the standard part names but none is missing either: the weights (`net`), Adam (`opt`), an
EMA of the weights (`ema`), a float32 GradScaler (`scaler`, its scale in the history field
`scale`), the data position (`order`), and three generators: `rng-shuffle` (NumPy, the epochs'
permutations), `rng-aug` (NumPy, input jitter), `rng-dropout` (torch, the dropout masks). It
declares them in `meta.parts` (protocol 1.2), which is what `--faults all` must ask for: one
resume per part, each caught and each diagnosed by its own name.

Bug `lose-aug`: the jitter generator is left out of the restore. True cause: `rng-aug`.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("net", "opt", "ema", "scaler", "order", "rng-shuffle", "rng-aug", "rng-dropout")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-aug",))
kit.configure_torch(dtype=torch.float32)

torch.manual_seed(0)
x, y = _corpus.regression(16)
net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**5, growth_interval=2)
ema = {name: p.detach().clone() for name, p in net.named_parameters()}
gens = kit.Generators(shuffle=np.random.default_rng(0), aug=np.random.default_rng(1), dropout=torch.Generator())
gens["dropout"].manual_seed(2)
order = kit.ShuffledOrder.fresh(16, gens["shuffle"])
step, history = 0, []


def forward(inputs: torch.Tensor, train: bool) -> torch.Tensor:
    h = net[1](net[0](inputs))
    if train:
        h = h * (torch.rand(h.shape, generator=gens["dropout"]) > 0.2) / 0.8
    return net[2](h)


if args.resume:
    saved = kit.load_checkpoint(args.resume)
    for part, thing in (("net", net), ("opt", opt), ("scaler", scaler), ("order", order)):
        if part not in args.omit:
            thing.load_state_dict(saved[part])
    if "ema" not in args.omit:
        ema = {name: w.clone() for name, w in saved["ema"].items()}
    step, history = saved["step"], saved["history"]
    restored = [n for n in gens.names if not (flags.bug == "lose-aug" and n == "aug")]
    gens.restore(saved["generators"], [n for n in restored if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["shuffle"])
    jitter = torch.from_numpy(gens["aug"].normal(0.0, 0.05, (len(rows), 2)).astype(np.float32))
    lr, scale = opt.param_groups[0]["lr"], scaler.get_scale()
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(forward(x[rows] + jitter, train=True), y[rows])
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    with torch.no_grad():
        for name, p in net.named_parameters():
            ema[name].mul_(0.9).add_(p, alpha=0.1)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item(), scale=scale))

args.output.mkdir(parents=True)
saved = {"net": net.state_dict(), "opt": opt.state_dict(), "scaler": scaler.state_dict(), "ema": ema}
saved |= {"order": order.state_dict(), "generators": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", saved)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={key: saved[key] for key in ("net", "opt", "scaler", "ema", "order")},
    next={"lr": opt.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(forward(x, train=False), y).item()},
    meta=_corpus.meta(args, PARTS),
)
