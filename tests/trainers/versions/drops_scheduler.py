"""The reference trainer's next version, which no longer loads its LR scheduler's state from an older checkpoint
(its scheduler starts over): the part lost at the restore.

    python -B tests/trainers/versions/drops_scheduler.py --steps 8 --output runs/b --resume runs/a/checkpoint.pt
"""

from torch.optim import lr_scheduler

from resumeproof.reference.train import main


def ignores(self, state_dict):
    """A renamed key, a changed class: the saved state never reaches the scheduler."""


lr_scheduler.LRScheduler.load_state_dict = ignores

if __name__ == "__main__":
    main()
