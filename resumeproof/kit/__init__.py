"""The trainer kit: what a PyTorch training loop needs to speak resume-protocol/1 (docs/kit.md).

    from resumeproof import kit

    args = kit.flags.parse(parts=...)              # the protocol's flags, checked; the parts --omit accepts
    gens = kit.Generators.global_()                # capture / restore / peek any generators
    kit.save_checkpoint(path, state)               # atomic, fingerprinted, read back and checked
    state = kit.load_checkpoint(path)              # fingerprint, then torch.load(weights_only=True)
    kit.write_summary(args.output, step=..., meta=args.meta())   # summary.json, exact JSON of any training state
    run = kit.start(parts)                         # or one kit.Run around the loop: flags, run directory, summary

This side imports torch; the verifier (`resumeproof.verify`) never does.
"""

from resumeproof.common.errors import ResumeproofError, exit_on_error, refuse_existing
from resumeproof.kit import distributed, flags, layout, pivot, resume
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.checkpoint import load as load_checkpoint
from resumeproof.kit.checkpoint import load_directory as load_checkpoint_dir
from resumeproof.kit.checkpoint import save as save_checkpoint
from resumeproof.kit.checkpoint import save_directory as save_checkpoint_dir
from resumeproof.kit.data import ShuffledOrder
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.generators import Generators
from resumeproof.kit.identity import device_identity, identity, versions
from resumeproof.kit.run import Run, start
from resumeproof.kit.rundir import RunDir
from resumeproof.kit.summary import record, to_json, write_summary
from resumeproof.kit.torch_setup import configure as configure_torch

ProtocolRun = Run  # the name of kit.Run in 0.2

__all__ = [
    "CheckpointError",
    "Generators",
    "ProtocolArgs",
    "ProtocolRun",
    "ResumeproofError",
    "Run",
    "RunDir",
    "ShuffledOrder",
    "configure_torch",
    "device_identity",
    "distributed",
    "exit_on_error",
    "flags",
    "identity",
    "layout",
    "load_checkpoint",
    "load_checkpoint_dir",
    "pivot",
    "record",
    "refuse_existing",
    "resume",
    "save_checkpoint",
    "save_checkpoint_dir",
    "start",
    "to_json",
    "versions",
    "write_summary",
]
