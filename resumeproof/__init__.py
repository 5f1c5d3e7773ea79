"""resumeproof: prove that a PyTorch training run resumes exactly.

Two sides, one folder each:
- `resumeproof.verify`: the verifier. It judges a training command from outside, as fresh
  processes, and never imports torch (tests/test_boundary.py proves it).
- `resumeproof.kit`: the trainer kit a training loop imports to speak resume-protocol/1.
`resumeproof.common` holds the torch-free names and file formats both sides share, and
`resumeproof.cli` the `resumeproof` command.
"""
