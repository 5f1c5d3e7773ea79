"""What one trajectory adds to an evaluation, and what it is held against (verify/judge/summaries/trainer.py,
verify/judge/summaries/tiers.py)."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.protocol import CONTINUOUS
from resumeproof.verify.judge.compare import Comparison, compare_keys, merge
from resumeproof.verify.judge.summaries.diagnosis import Context
from resumeproof.verify.judge.summaries.evidence import Evidence
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.expectation import Expectation
from resumeproof.verify.vocabulary.findings import CONCORDANT, DIVERGENT, Check, Determinism, Diagnosis, Fault, Resume

Summaries = Mapping[str, Summary]
NO_RANDOM_STATE = Diagnosis(
    lost=(),
    rule="identical-to-full-resume",
    step=None,
    evidence="the resume without RNG restore equals the full resume bit for bit",
    explanation="the checkpoint restores no random state, or the trainer ignores --omit-rng-restore",
)


@dataclass(frozen=True, kw_only=True)
class Against:
    """What every trajectory is held against: the continuous run, the evidence so far, and how to compare."""

    summaries: Summaries
    atol: float
    parts: tuple[str, ...]  # the trainer's declared parts, or the standard set
    epoch_starts: frozenset[int]  # updates that begin an epoch
    determinism: Determinism
    found: Evidence

    @property
    def continuous(self) -> Summary:
        return self.summaries[CONTINUOUS]

    def context(self, e: Expectation) -> Context:
        return Context(resumed_at=e.resumed_at, parts=self.parts, epoch_starts=self.epoch_starts, atol=self.atol)


@dataclass(frozen=True, kw_only=True)
class Held:
    """What one trajectory adds to the evaluation: its check, and its entry where it has one."""

    check: Check
    restore: Check | None = None  # not deterministic: the restore tier's check of a resume (tiers.py)
    resume: Resume | None = None  # a resume that must be concordant
    negative: Resume | None = None  # the negative control
    fault: tuple[str, Fault] | None = None  # the part a fault omits, and how it was caught
    nonfinite: tuple[str, ...] = ()  # paths in `state` where both runs hold the same infinity


def compared(a: Against, other: Summary) -> tuple[dict[str, Comparison], Comparison]:
    """Every compared key of the summary against the continuous run's, and all of them merged."""
    parts_of = compare_keys(a.continuous.surfaces, other.surfaces, protocol.COMPARED_KEYS, a.atol)
    return parts_of, merge(parts_of.values())


def resume_entry(
    continuous: Summary, other: Summary, full: Comparison, state: Comparison, why: Diagnosis | None, same: bool | None
) -> Resume:
    """How far a resume lands from the continuous run, and why it differs where it does."""
    final, reference = mse(other), mse(continuous)
    numbers = protocol.is_number(final) and protocol.is_number(reference)
    return Resume(
        verdict=CONCORDANT if full.concordant else DIVERGENT,
        max_state_deviation=state.max_abs_diff,
        max_deviation=full.max_abs_diff,
        final_mse=final if protocol.is_number(final) else None,
        mse_deviation=abs(final - reference) if numbers else None,
        mismatches=full.count,
        first_mismatch=full.first_path,
        diagnosis=why,
        identical_to_full_resume=same,
    )


def mse(summary: Summary) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary.eval.get("mse") if isinstance(summary.eval, dict) else None
