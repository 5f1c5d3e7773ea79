"""Lightning 2.6, resumed the way its documentation tells users to, as a protocol trainer (docs/audit.md).

    resumeproof verify --output runs/lightning --steps 12 --interrupt-at epochs \
        --train-cmd "python -B examples/lightning_example.py"

The resume path is "Saving and loading checkpoints": checkpoints written by `ModelCheckpoint`,
and "to resume training from a checkpoint, use the `ckpt_path` argument in the `fit()` method",
which "automatically restores model, epoch, step, LR schedulers, etc.". Lines marked
`# protocol` are all the protocol asks of the script. `--fix user` applies docs/audit.md's
user-level fix; `--remove-cause CODE` removes one confirmed cause (examples/causes.py).
"""

import causes
import experiment as E
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

from resumeproof import kit  # protocol
from resumeproof.kit.adapters import lightning  # protocol

variant, argv = causes.parse("lightning")
fixed = variant.fix == "user"
run = kit.start(lightning.PARTS, argv)  # protocol
rng_state = fixed or variant.removes("L1")  # Lightning saves no generator: a callback does
resumable_loader = fixed or variant.removes("L2")  # a DataLoader whose position Lightning saves


class Regression(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = E.Net()
        self.x, self.y = E.data()

    def training_step(self, batch, batch_idx):
        return E.loss_fn(self.net(batch["x"]), batch["y"])

    def configure_optimizers(self):
        optimizer, scheduler = E.optimizer_and_scheduler(self.parameters())
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def train_dataloader(self):
        rows = E.Rows(self.x, self.y)
        if resumable_loader:
            return lightning.ResumableLoader(rows, batch_size=E.EXPERIMENT.batch, seed=1)
        return DataLoader(rows, batch_size=E.EXPERIMENT.batch, shuffle=True)


L.seed_everything(E.EXPERIMENT.seed, verbose=False)
module = Regression()
protocol = lightning.ProtocolCallback(run, rows_key="idx")  # protocol
checkpoints = ModelCheckpoint(dirpath=run.scratch, every_n_train_steps=1, save_top_k=1)  # protocol: each step
callbacks = [protocol, checkpoints, *([lightning.GlobalRngState(run)] if rng_state else [])]  # protocol
trainer = L.Trainer(
    max_steps=run.target(),
    callbacks=callbacks,  # protocol: these two arguments
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    limit_val_batches=0,
    num_sanity_val_steps=0,
)
trainer.fit(module, ckpt_path=protocol.ckpt_path)  # protocol: the verified checkpoint's .ckpt, or None
protocol.finish(trainer, eval=E.evaluate(module.net, module.x, module.y))  # protocol
