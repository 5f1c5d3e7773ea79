"""A Lightning script as people write them for a Slurm cluster, with no thought of resumeproof: a `Trainer` over a
module with dropout and a plain shuffled DataLoader, checkpointing every step, and relying on Lightning's own
auto-requeue for preemption (`SLURMEnvironment`: on the job's SIGUSR1 it saves `hpc_ckpt_N.ckpt` in
`default_root_dir` and runs `scontrol requeue`; the restarted job resumes from that file by itself).
`resumeproof verify --observe --launcher slurm --preempt signal` verifies it (tests/e2e/test_preempt_script.py):

    resumeproof verify --observe --launcher slurm --preempt signal --output runs/lightning-requeue \\
      --train-cmd  "python -B tests/trainers/lightning_requeue_script.py --steps {steps} --out {run}" \\
      --resume-cmd "python -B tests/trainers/lightning_requeue_script.py --steps {steps} --out {run} \\
                    --ckpt {checkpoint}" \\
      --checkpoint "{run}/step={step}.ckpt"

What Lightning's hpc checkpoint leaves out is docs/audit.md's (L1, L2): no random generator, and a plain DataLoader's
position; the verdict names what the restarted job's first update shows.
"""

import argparse

import lightning as L
import torch
from torchdata.stateful_dataloader import StatefulDataLoader

p = argparse.ArgumentParser(description="Fit a toy regression with Lightning; checkpoint every step.")
p.add_argument("--steps", type=int, required=True, help="optimizer steps in all")
p.add_argument("--out", required=True, help="default_root_dir, and where step={step}.ckpt goes")
p.add_argument("--ckpt", default=None, help="a checkpoint to resume from")
p.add_argument("--fixed", action="store_true", help="L1 and L2 closed: the generators saved, a stateful loader")
args = p.parse_args()


class GeneratorState(L.Callback):
    """The global torch generator in the checkpoint (`--fixed`): Lightning saves none of its own (L1)."""

    def state_dict(self) -> dict:
        return {"torch": torch.get_rng_state()}

    def load_state_dict(self, state: dict) -> None:
        torch.set_rng_state(state["torch"])


class Regression(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1)
        )

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=0.01)


if __name__ == "__main__":
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    L.seed_everything(0)
    x = torch.linspace(-2, 2, 48).reshape(24, 2)
    rows = torch.utils.data.TensorDataset(x, (x[:, :1] * x[:, 1:]).sin())
    if args.fixed:  # its own generator: else the loader draws its seed from the global one after the restore
        order = torch.Generator().manual_seed(0)
        loader = StatefulDataLoader(rows, batch_size=4, shuffle=True, generator=order)
    else:
        loader = torch.utils.data.DataLoader(rows, batch_size=4, shuffle=True)
    every = L.pytorch.callbacks.ModelCheckpoint(
        dirpath=args.out, filename="{step}", every_n_train_steps=1, save_top_k=-1
    )
    trainer = L.Trainer(
        max_steps=args.steps,
        default_root_dir=args.out,
        callbacks=[every, *([GeneratorState()] if args.fixed else [])],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Regression(), loader, ckpt_path=args.ckpt)
