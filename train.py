"""The reference trainer's entry point in a checkout:

    python -B train.py --steps 10 --output runs/a                                 # = python -B -m resumeproof.reference
    torchrun --standalone --nproc-per-node 2 train.py --steps 10 --output runs/w2   # DDP over gloo, DCP checkpoint

The trainer itself is resumeproof/reference/train.py (docs/reference-trainer.md).
"""

from resumeproof.reference.train import main

if __name__ == "__main__":
    main()
