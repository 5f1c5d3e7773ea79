"""The transformers 5.17 Trainer, resumed the way its documentation tells users to, as a protocol trainer.

    resumeproof verify --output runs/transformers --steps 12 --interrupt-at epochs \
        --allow-unsafe-pickle rng_state.pth --allow-unsafe-pickle training_args.bin \
        --train-cmd "python -B examples/transformers_example.py"

The resume path is `Trainer.train(resume_from_checkpoint=...)`: "If a `str`, local path to a
saved checkpoint as saved by a previous instance of [`Trainer`] ... training will resume from the
model/optimizer/scheduler states loaded here", with `ignore_data_skip=False` (the default: "skips
seen data ... exact continuation"). The model follows the Trainer's contract for a plain
`nn.Module` (it returns its loss). Lines marked `# protocol` are all the protocol asks of the
script. `--fix user` applies docs/audit.md's user-level fix; `--remove-cause CODE` removes one
confirmed cause (examples/causes.py).
"""

import causes
import experiment as E
import torch
from transformers import TrainingArguments, set_seed

from resumeproof import kit  # protocol
from resumeproof.kit.adapters import transformers  # protocol

variant, argv = causes.parse("transformers")
fixed = variant.fix == "user"
run = kit.start(transformers.PARTS, argv)  # protocol


class Regression(torch.nn.Module):
    """The experiment's network, returning its loss as the Trainer expects of a model."""

    def __init__(self) -> None:
        super().__init__()
        self.net = E.Net()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        prediction = self.net(x)
        return {"loss": E.loss_fn(prediction, y), "prediction": prediction}


set_seed(E.EXPERIMENT.seed)
x, y = E.data()
model = Regression()
optimizer, scheduler = E.optimizer_and_scheduler(model.parameters())
protocol = {"output_dir": run.scratch, "max_steps": run.target(), "remove_unused_columns": False}  # protocol
arguments = TrainingArguments(
    **protocol,
    per_device_train_batch_size=E.EXPERIMENT.batch,
    seed=E.EXPERIMENT.seed,
    use_cpu=True,
    report_to="none",
    disable_tqdm=True,
    dataloader_num_workers=0,
)
trainer = transformers.ProtocolTrainer(  # protocol: the Trainer, recording each update
    run,
    model=model,
    args=arguments,
    optimizers=(optimizer, scheduler),
    train_dataset=(E.StatelessRows if fixed else E.Rows)(x, y),
)
trainer.train(resume_from_checkpoint=run.resume)  # protocol: the verified checkpoint folder, or None
trainer.finish(eval=E.evaluate(model.net, x, y))  # protocol
