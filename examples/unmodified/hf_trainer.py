"""A transformers `Trainer` script as people write them, with no thought of resumeproof: `HfArgumentParser` over its
own arguments and `TrainingArguments`, a model that returns its loss, dropout, and
`trainer.train(resume_from_checkpoint=...)`. `resumeproof verify --observe --preset transformers` verifies it with
no line changed (docs/observe.md); the preset adds `--max_steps {steps} --save_steps 1 --output_dir {run}`, and
`--resume_from_checkpoint {checkpoint}` to resume from `{run}/checkpoint-{step}`:

    cd examples/unmodified
    resumeproof verify --observe --preset transformers --output runs/hf --steps 8 --interrupt-at 3 \\
      --train-cmd "python hf_trainer.py --per_device_train_batch_size 4 --use_cpu --report_to none"

`--augment` adds noise drawn from NumPy's global generator in the dataset, as torchvision-style transforms do:
the Trainer restores the generators only after fetching the resumed epoch's first batch (docs/audit.md, H1), so a
resume in the middle of an epoch draws that batch's noise from freshly seeded generators.
"""

from dataclasses import dataclass

import numpy as np
import torch
from transformers import HfArgumentParser, Trainer, TrainingArguments, set_seed


@dataclass
class ScriptArguments:
    augment: bool = False
    rows: int = 24


class Rows(torch.utils.data.Dataset):
    def __init__(self, rows: int, augment: bool) -> None:
        self.x = torch.linspace(-2, 2, 2 * rows).reshape(rows, 2)
        self.y = (self.x[:, :1] * self.x[:, 1:]).sin()
        self.augment = augment

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        x = self.x[i] + (torch.from_numpy(np.random.normal(0, 0.05, 2)) if self.augment else 0)
        return {"x": x, "y": self.y[i]}


class Regression(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1)
        )

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"loss": torch.nn.functional.mse_loss(self.net(x), y)}


script, args = HfArgumentParser((ScriptArguments, TrainingArguments)).parse_args_into_dataclasses()
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
set_seed(args.seed)
trainer = Trainer(
    model=Regression(),
    args=args,
    train_dataset=Rows(script.rows, script.augment),
    data_collator=lambda rows: {key: torch.stack([row[key] for row in rows]) for key in rows[0]},
)
trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
