"""A Lightning script as people write them, with no thought of resumeproof: a `LightningCLI` over a module with
dropout and a data module, run with `fit`. Its author knew Lightning's two resume gaps (docs/audit.md): the
checkpoint holds no random generator (L1), so a callback the module configures saves them, and a plain DataLoader
restarts its epoch (L2), so the data module returns torchdata's `StatefulDataLoader`, whose position Lightning
saves. `resumeproof verify --observe --preset lightning` verifies it with no line changed (docs/observe.md); the
preset adds a checkpoint every step, `{run}/step={step}.ckpt`, and `--ckpt_path {checkpoint}` on the resume:

    cd examples/unmodified
    resumeproof verify --observe --preset lightning --output runs/lightning --steps 8 --interrupt-at 3 \\
      --train-cmd "python lightning_cli.py fit --trainer.logger false --trainer.enable_progress_bar false"

`--data.stateful false` returns a plain DataLoader, the resume that Lightning only warns about: the resumed epoch
starts again from its first batch.
"""

import random

import lightning as L
import numpy as np
import torch
from lightning.pytorch.cli import LightningCLI
from torchdata.stateful_dataloader import StatefulDataLoader


class GeneratorState(L.Callback):
    """The global generators in the checkpoint: Lightning saves none of its own. NumPy's key array travels as a
    tensor, since Lightning loads checkpoints with `weights_only=True`."""

    def state_dict(self) -> dict:
        name, keys, *rest = np.random.get_state()
        numpy = (name, torch.from_numpy(keys.copy()), *rest)
        return {"torch": torch.get_rng_state(), "numpy": numpy, "python": random.getstate()}

    def load_state_dict(self, state: dict) -> None:
        name, keys, *rest = state["numpy"]
        torch.set_rng_state(state["torch"])
        np.random.set_state((name, keys.numpy(), *rest))
        random.setstate(state["python"])


class Regression(L.LightningModule):
    def __init__(self, hidden: int = 16, dropout: float = 0.2, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(2, hidden), torch.nn.Tanh(), torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1)
        )

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> dict:
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def configure_callbacks(self) -> list[L.Callback]:
        return [GeneratorState()]


class Rows(L.LightningDataModule):
    def __init__(self, rows: int = 24, batch_size: int = 4, stateful: bool = True) -> None:
        super().__init__()
        x = torch.linspace(-2, 2, 2 * rows).reshape(rows, 2)
        self.rows = torch.utils.data.TensorDataset(x, (x[:, :1] * x[:, 1:]).sin())
        self.batch_size, self.stateful = batch_size, stateful

    def train_dataloader(self) -> torch.utils.data.DataLoader:
        loader = StatefulDataLoader if self.stateful else torch.utils.data.DataLoader
        # Its own generator: a loader on the global one draws its seed from it when Lightning makes the iterator,
        # after the generators were restored, and the resumed run's dropout would part from the continuous run's.
        order = torch.Generator().manual_seed(0)
        return loader(self.rows, batch_size=self.batch_size, shuffle=True, generator=order)


if __name__ == "__main__":
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    LightningCLI(Regression, Rows, seed_everything_default=0)
