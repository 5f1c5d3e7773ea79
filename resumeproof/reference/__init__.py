"""The reference experiment: a small, fully specified training in which every kind of state matters.

`train.py` is the trainer, built on the trainer kit alone and read top to bottom; `synthetic.csv`
its data (data/make_data.py at the repository's top regenerates it byte for byte). Run it with
`python -B -m resumeproof.reference`, or `train.py` at the repository's top (docs/reference-trainer.md).
Importing this package imports nothing; the trainer imports torch.
"""
