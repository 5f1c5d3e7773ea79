"""A user's training script on the kit's standard layout: SGD with momentum, a cosine schedule, dropout.

python -B train.py --steps 10 --output runs/a
python -B -m pytest            # tests/test_resume.py proves the resume exact
"""

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from resumeproof import kit
from resumeproof.kit import layout

PARTS = layout.parts(("numpy", "torch"))


@dataclass(frozen=True)
class Config:
    rows: int = 20
    batch: int = 5  # 4 updates per epoch
    lr: float = 0.1
    seed: int = 1


def build(c: Config) -> layout.Training:
    torch.manual_seed(c.seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(6, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=c.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=12)
    gens = kit.Generators(numpy=np.random.default_rng(c.seed), torch=torch.default_generator)
    order = kit.ShuffledOrder.fresh(c.rows, gens["numpy"])
    return layout.Training(model=model, optimizer=optimizer, scheduler=scheduler, generators=gens, order=order)


def main() -> None:
    args = kit.flags.parse(parts=PARTS)
    kit.refuse_existing(args.output)
    kit.configure_torch()
    c = Config()
    x = torch.linspace(-2, 2, c.rows * 3).reshape(c.rows, 3)
    y = x.sum(dim=1, keepdim=True).sin()
    t = build(c)
    identity = kit.identity([Path(__file__)], [])
    if args.resume:
        state = kit.load_checkpoint(args.resume)
        layout.validate(args.resume, state, layout.Expected.of(t, asdict(c), identity, c.batch))
        restore = layout.restore(state, t, args.omit)
        t.generators.restore(state[layout.RNG], restore)  # last: nothing draws before the loop
    for _ in range(args.steps):
        rows = t.order.take(c.batch, t.generators["numpy"])
        lr = t.optimizer.param_groups[0]["lr"]
        t.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(t.model(x[rows]), y[rows])
        loss.backward()
        t.optimizer.step()
        t.scheduler.step()
        t.step += 1
        t.history.append(kit.record(t.step, rows, lr, loss.item()))
    args.output.mkdir(parents=True)
    kit.save_checkpoint(args.output / "checkpoint.pt", layout.capture(t, asdict(c), identity, []))
    kit.write_summary(
        args.output,
        step=t.step,
        history=t.history,
        state={"model": t.model.state_dict(), "optimizer": t.optimizer.state_dict(), "data": t.order.state_dict()},
        next={"lr": t.optimizer.param_groups[0]["lr"], "rng": t.generators.peek()},
        eval={"mse": torch.nn.functional.mse_loss(t.model.eval()(x), y).item()},
        meta=args.meta(),
    )


if __name__ == "__main__":
    main()
