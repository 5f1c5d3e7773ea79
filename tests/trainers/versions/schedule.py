"""The reference trainer's next version, whose step schedule decays one update later (a fix of its off-by-one): it
restores every part of an older version's checkpoint exactly, and its learning rate moves at the next decay.

    python -B tests/trainers/versions/schedule.py --steps 8 --output runs/b --resume runs/a/checkpoint.pt
"""

from torch.optim import lr_scheduler

from resumeproof.reference.train import main


def decays_one_later(self):
    due = self.last_epoch > 1 and (self.last_epoch - 1) % self.step_size == 0
    return [group["lr"] * (self.gamma if due else 1.0) for group in self.optimizer.param_groups]


lr_scheduler.StepLR.get_lr = decays_one_later

if __name__ == "__main__":
    main()
