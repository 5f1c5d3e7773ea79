"""The original run a fork's checkpoint comes from, as the files beside the checkpoint tell it, read without torch: the
fork point, and the history on both sides of it (docs/fork.md).

`summary.json` (held to the protocol's section 3) holds the history of the last process that completed there;
`loss.jsonl` (a long run's one cumulative history, the last record of a step authoritative) adds the updates logged
after it. A generation's name (`step_NNNNNN.pt`), or the summary beside a final `checkpoint.pt`, names the fork point.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import losslog, runfiles
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import CHECKPOINT, SUMMARY, ProtocolError
from resumeproof.verify.run.summary import Summary, read_summary


@dataclass(frozen=True, kw_only=True)
class Original:
    run: Path  # the directory that holds the checkpoint
    step: int | None  # the fork point as the files name it; None: the branches' summaries alone say it
    records: dict[int, dict[str, Any]]  # its history by step
    summary: Summary | None  # its summary.json, where there is one
    sources: tuple[str, ...]  # the files the records came from

    def after(self, k: int, steps: int) -> list[dict[str, Any]]:
        """Its updates k+1, k+2, ..., at most `steps`, as far as its records go without a gap: the continuation a
        control must reproduce."""
        found = []
        for step in range(k + 1, k + steps + 1):
            if step not in self.records:
                break
            found.append(self.records[step])
        return found


def read(checkpoint: Path) -> Original:
    """The original run of `checkpoint`: what its directory's summary.json and loss.jsonl hold (none: no records)."""
    run = checkpoint.parent
    summary = _summary(run / SUMMARY, checkpoint)
    records = {r["step"]: r for r in summary.history} if summary else {}
    sources = [SUMMARY] if summary else []
    log = run / losslog.NAME
    if log.is_file():
        logged = {s: r for s, r in losslog.authoritative(log).items() if isinstance(s, int) and s not in records}
        records |= {
            s: {k: v for k, v in r.items() if k != losslog.REPLAY} for s, r in logged.items()
        }  # the log's mark dropped
        sources += [losslog.NAME] if logged else []
    step = _fork_point(checkpoint, summary)
    return Original(run=run, step=step, records=records, summary=summary, sources=tuple(sources))


def _summary(path: Path, checkpoint: Path) -> Summary | None:
    if not path.is_file():
        return None
    try:
        return read_summary(path)
    except ProtocolError as err:  # evidence that cannot be read is never passed over in silence
        raise ResumeproofError(f"{checkpoint}: the run beside it: {err}") from None


def _fork_point(checkpoint: Path, summary: Summary | None) -> int | None:
    generation = runfiles.GENERATION.fullmatch(checkpoint.name)
    if generation:
        return int(generation.group(1))
    return summary.step if summary is not None and checkpoint.name == CHECKPOINT else None
