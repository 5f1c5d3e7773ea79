"""python -B -m resumeproof.reference --steps 10 --output runs/a: the reference trainer (train.py beside this file)."""

from resumeproof.reference.train import main

main()
