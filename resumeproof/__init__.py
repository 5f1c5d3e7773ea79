"""resumeproof: prove that a PyTorch training run resumes exactly.

Three layers (docs/architecture.md):
- `resumeproof.common`: the torch-free words and file formats both sides share.
- `resumeproof.verify`: the verifier. It judges a training command from outside, as fresh
  processes, and imports torch only for the opt-in `--torch-load` (tests/test_boundary.py holds it).
- `resumeproof.kit`: the trainer kit a training loop imports to speak resume-protocol/1.
On top: `resumeproof.cli` (the `resumeproof` command), the pytest plugin, and `resumeproof.reference`,
the bundled reference trainer.
"""
