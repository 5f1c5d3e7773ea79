"""A watched run's resume history as a table (the terminal) or Markdown (a CI job summary), from its resumes.jsonl.

Every restart is one row: when, from which checkpoint (saved after which update), which process (host, rank, Slurm
job and restart count, torchrun's restart count), and whether its restore brought every part back bit for bit, or
which part differs and how. A line that cannot be read (one torn by a process killed mid-write) is counted, never
read as a restart that differs.
"""

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from resumeproof.common import watching
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.watching import Restart

HEADERS = ("time", "checkpoint", "saved after", "process", "restore")


class WatchError(ResumeproofError):
    """A watch folder with nothing to report."""


@dataclass(frozen=True)
class History:
    """What a watched run's resumes.jsonl holds."""

    run: Path
    restarts: list[Restart]
    unread: int  # lines that could not be read

    @property
    def exact(self) -> bool:
        """Every restart restored every part it saved, bit for bit (one not judged is no mismatch)."""
        return all(r.status != watching.DIFFERS for r in self.restarts)

    def summary(self) -> str:
        differs = sum(r.status == watching.DIFFERS for r in self.restarts)
        unjudged = sum(r.status == watching.UNJUDGED for r in self.restarts)
        said = f"{len(self.restarts)} restarts, {differs} not restored exactly"
        said += f", {unjudged} not judged" if unjudged else ""
        return said + (f", {self.unread} unreadable lines" if self.unread else "")


def read(run: Path) -> History:
    """The history of the watch folder `run`; one line of error where it holds none."""
    if not (run / watching.RESUMES).is_file():
        raise WatchError(f"{run}: no {watching.RESUMES}: not a watched run, or none of its starts resumed yet")
    restarts, unread = watching.read_restarts(run)
    return History(run, restarts, unread)


def headline(history: History) -> str:
    return f"{history.run}: {history.summary()}"


def table(history: History) -> Table:
    t = Table()
    for header in HEADERS:
        t.add_column(header, overflow="fold")
    for r in history.restarts:
        t.add_row(*_cells(r))
    return t


def markdown(history: History) -> str:
    rows = [f"| {' | '.join(HEADERS)} |", f"|{'---|' * len(HEADERS)}"]
    rows += [f"| {' | '.join(cell.replace('|', '/') for cell in _cells(r))} |" for r in history.restarts]
    return f"### resumeproof watch: {history.summary()}\n\n" + "\n".join(rows) + "\n"


def _cells(r: Restart) -> tuple[str, ...]:
    return (r.time, Path(r.checkpoint).name, str(r.saved_update), _process(r.process), _restore(r))


def _process(p: dict) -> str:
    said = [f"{p.get('host')}:{p.get('pid')}"]
    said += [f"rank {p['rank']}"] if p.get("rank") is not None else []
    said += [f"job {p['job']}"] if p.get("job") else []
    said += [f"requeue {p['restart']}"] if p.get("restart") else []
    said += [f"torchrun restart {p['elastic_restart']}"] if p.get("elastic_restart") else []
    return ", ".join(said)


def _restore(r: Restart) -> str:
    if r.status == watching.EXACT:
        return "exact"
    if r.status == watching.UNJUDGED:
        return f"not judged: {r.note}"
    parts = "; ".join(f"{d['part']}: {d['how']}" for d in r.differences)
    return f"DIFFERS: {parts}" + (" (stopped)" if r.stopped else "")
