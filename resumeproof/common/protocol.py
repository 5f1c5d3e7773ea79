"""resume-protocol/1 (docs/protocol.md): every word both sides use, defined once, and JSON that keeps every float64 bit.

Part names (what `--omit` names), the protocol's flags, the trajectories a verification runs and the
identities of its checks live here and nowhere else; a check is recognised by its `CheckId`, never
by its wording.
"""

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError

PROTOCOL = "resume-protocol/1"
REVISION = "1.6"  # the revision of docs/protocol.md this code implements; summaries keep PROTOCOL
CHECKPOINT, SUMMARY = "checkpoint.pt", "summary.json"
COMPARED_KEYS = ("step", "history", "state", "next", "eval")  # everything except `meta`
RECORD_KEYS = {"step": int, "rows": list, "lr": float, "loss": float}
ROWS, LOSS = "rows", "loss"  # a history record's keys (its step and lr are STEP and LR)
STEP, HISTORY, STATE, NEXT, EVAL, META = "step", "history", "state", "next", "eval", "meta"
PROTOCOL_KEY = "protocol"  # the summary's protocol name
LR, RNG = "lr", "rng"  # next.lr: the lr the next update would use; next.rng: each generator's next draw
META_OMITTED = "omitted"  # meta.omitted: the parts a fault run did not restore, sorted (revision 1.1)
META_PARTS = "parts"  # meta.parts: every part the trainer's --omit accepts (revision 1.2)
META_ARGV = "argv"  # meta.argv: the command line the trainer ran with, where it records it (the reference does)
META_CHECKPOINT_SHA256 = "checkpoint_sha256"  # meta.checkpoint_sha256: the final checkpoint's digest, where recorded
META_VERSIONS, META_IDENTITY = "versions", "identity"  # meta's versions (Python, torch, ...) and code and data digests

# Parts: the state a resume must bring back, in --omit's names. A part is any lower-case name;
# `rng-NAME` parts are generators. The standard set is what the kit's layout saves.
MODEL, OPTIMIZER, SCHEDULER, DATA, PROGRESS, SCALER = "model", "optimizer", "scheduler", "data", "progress", "scaler"
RNG_PREFIX = "rng-"
STANDARD_GENERATORS = ("python", "numpy", "torch")
PART_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
FLAT = "flat"  # --faults flat: resume from the classic flat file of weights and Adam moments alone, not a part
EMA = "ema"  # no standard part, but a common one: the diagnosis knows its other names (teacher, swa, ...)
# Under torchrun: a deliberate fault that leaves the data position or the generators unrestored on every rank
# but rank 0 (docs/distributed.md). A run without other ranks withdraws them.
OTHER_RANKS_DATA, OTHER_RANKS_RNG = "other-ranks.data", "other-ranks.rng"
RANK_PARTS = (OTHER_RANKS_DATA, OTHER_RANKS_RNG)


def rng_part(generator: str) -> str:
    """The part name of a generator: 'numpy' -> 'rng-numpy'."""
    return f"{RNG_PREFIX}{generator}"


def generator_of(part: str) -> str | None:
    """The generator a part names ('rng-numpy' -> 'numpy'), or None for a part that is not a generator."""
    return part.removeprefix(RNG_PREFIX) if part.startswith(RNG_PREFIX) else None


def standard_parts(generators: tuple[str, ...] = STANDARD_GENERATORS) -> tuple[str, ...]:
    """The kit's layout, in the order a fault matrix lists it: model, optimizer, scheduler, one rng part per
    generator, data, progress."""
    return (MODEL, OPTIMIZER, SCHEDULER, *(rng_part(name) for name in generators), DATA, PROGRESS)


STANDARD_PARTS = standard_parts()

# Flags the verifier passes and a trainer accepts (docs/protocol.md, sections 1 and 6).
STEPS_FLAG, OUTPUT_FLAG, RESUME_FLAG = "--steps", "--output", "--resume"
OMIT_FLAG, OMIT_RNG_FLAG = "--omit", "--omit-rng-restore"
CHECKPOINT_EVERY_FLAG, UNTIL_STEP_FLAG, PACE_FLAG, KEEP_FLAG = "--checkpoint-every", "--until-step", "--pace", "--keep"
RESUME_FLAT_FLAG = "--resume-flat"
REQUEUE_ON_FLAG = "--requeue-on"  # a long run under Slurm: on this signal, checkpoint and `scontrol requeue` the job
# What a command that runs a trainer from a checkpoint sets itself (an export's resume, a fork's branch): where it
# starts, how far it goes, where it writes, and the faults; never the user's to pass again.
RUN_FLAGS = (STEPS_FLAG, OUTPUT_FLAG, RESUME_FLAG, OMIT_FLAG, OMIT_RNG_FLAG, UNTIL_STEP_FLAG, RESUME_FLAT_FLAG)
AUTO = "auto"  # --resume auto: continue in place from the newest valid checkpoint
DEFAULT_KEEP = 3  # --keep: the generations a long run keeps when not told otherwise


def omit_token(part: str) -> str:
    """`--omit=PART` as one token: an argparse trainer that lacks --omit cannot read it as an abbreviation
    of --omit-rng-restore and silently run another fault."""
    return f"{OMIT_FLAG}={part}"


# The trajectories of a verification (docs/checks.md).
CONTINUOUS, INTERRUPTED, RESUMED, RESUMED_NO_RNG = "continuous", "interrupted", "resumed", "resumed-no-rng"
REPEAT = "continuous-repeat"  # the continuous run again: a run that differs from itself is not deterministic
# A trainer that differs from itself is held within its own run-to-run spread, measured by the continuous run and
# these repeats of it (docs/checks.md, "A trainer that is not deterministic": why two).
REPEATS = (REPEAT, f"{REPEAT}-2")
RESTORED = "restored"  # a resume of 0 updates: the state a resume starts from, as its summary reports it


def restored_name(resume: str) -> str:
    """The resume of 0 updates beside a resume (`resumed-6` -> `restored-6`, `fault-model` ->
    `restored-fault-model`): the same command from the same checkpoint, stopped before its first update."""
    head, _, rest = resume.partition("-")
    if head == RESUMED:
        return f"{RESTORED}-{rest}" if rest else RESTORED
    return f"{RESTORED}-{resume}"


def fed_name(resume: str) -> str:
    """A second resume beside a resume, ended before its first update's step (`resumed` -> `restored-inputs`):
    what the checkpoint feeds that update, held against the resume's own (docs/checks.md, the restore tier)."""
    return f"{restored_name(resume)}-inputs"


CADENCE = "continuous-every-1"  # writes a checkpoint after every step: must not disturb the run
PREEMPTED = "preempted"  # --preempt: one job Slurm preempts and restarts; it resumes itself in its own folder


def preempted_fault(part: str) -> str:
    """--preempt with --faults: the job Slurm preempts, its restart told to omit `part`: `preempted-fault-model`."""
    return f"{PREEMPTED}-{FAULT_PREFIX}{part}"


FAULT_PREFIX, CHAIN_PREFIX = "fault-", "chain"
# The branches `resumeproof fork` always runs besides the user's (docs/fork.md): without overrides, and its repeat.
CONTROL, CONTROL_REPEAT = "control", "control-repeat"


class CheckKind(StrEnum):
    """What a check asserts; with its trajectory and part, the identity every report finds it by."""

    CHECKPOINT = "checkpoint"  # a checkpoint's fingerprint and weights_only check
    PREFIX = "prefix"  # an interrupted or intermediate history is the continuous run's prefix
    RESUME = "resume"  # a resume is concordant with the continuous run
    RESTORE = "restore"  # a resume starts from what the interrupted process held (--observe; or not deterministic)
    NEGATIVE_CONTROL = "negative-control"  # the resume without RNG restore diverges
    FAULT = "fault"  # the resume without one part diverges
    CADENCE = "cadence"  # writing a checkpoint every step changes nothing
    PREEMPTION = "preemption"  # a job Slurm preempted was restarted once and went on from where it stopped
    DETERMINISM = "determinism"  # the continuous run equals a repeat of itself
    FINITE = "finite"  # the continuous run's outputs are finite where an output must be usable
    CHAOS = "chaos"  # a check of the chaos test
    CONTINUES = "continues"  # a fork's branch continues the original run's history, never reset
    CONTINUATION = "continuation"  # a fork's control reproduces the original run's updates after the fork point
    INPUTS = "inputs"  # a fork's branch starts its first update from the control's weights, moments, generators, batch
    COPY = "copy"  # resumeproof export: every file read back from the destination has the size and sha256 sent
    RESTORABLE = "restorable"  # resumeproof export: one update resumed from the copy equals the reference, bit for bit
    SIGNATURE = "signature"  # resumeproof export --sign-key: model.sig verifies over every file of the export
    LEGACY = "legacy"  # a check read from a document written before checks carried their identity


@dataclass(frozen=True, kw_only=True)
class CheckId:
    kind: CheckKind
    trajectory: str | None = None  # the trajectory the check is about
    part: str | None = None  # a fault's omitted part


class ProtocolError(ResumeproofError):
    """A trajectory's files do not follow resume-protocol/1."""


def dumps(value: Any) -> str:
    """JSON text in which every float64 reads back bit-identical (Python's repr)."""
    return json.dumps(value, indent=1, allow_nan=True) + "\n"


def write_json(path: Path, document: dict[str, Any]) -> None:
    """A result document (verification.json, chaos.json, fork.json) as JSON that keeps every float64 bit, written
    atomically."""
    fingerprint.write_atomic(path, dumps(document).encode())


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
