"""verify/watch/report.py: a watched run's history read off resumes.jsonl, as a table and as Markdown; exact only
where no restart differs (one not judged is no mismatch), and a folder without history refused in one line."""

import pytest
from rich.console import Console

from resumeproof.common import watching
from resumeproof.common.watching import Restart
from resumeproof.verify.watch import report

PROCESS = {"host": "node7", "pid": 41, "rank": 1, "job": "9120", "restart": "2", "elastic_restart": None}


def history(tmp_path, *statuses: str) -> report.History:
    for status in statuses:
        differences = [{"part": "optimizer", "how": "nothing of it is held now"}] if status == watching.DIFFERS else []
        note = "its record is unreadable" if status == watching.UNJUDGED else None
        line = Restart(
            time="2026-12-07T10:00:00+00:00",
            status=status,
            checkpoint="/runs/long/ckpt_000400.pt",
            digest="0" * 32,
            saved_update=400,
            process=PROCESS,
            differences=differences,
            note=note,
        )
        watching.append_line(tmp_path / watching.RESUMES, line.to_json())
    return report.read(tmp_path)


def test_each_restart_is_a_row_naming_its_checkpoint_process_and_restore(tmp_path):
    found = history(tmp_path, watching.EXACT, watching.DIFFERS, watching.UNJUDGED)
    assert not found.exact
    assert report.headline(found).endswith("3 restarts, 1 not restored exactly, 1 not judged")
    console = Console(width=300, record=True)
    console.print(report.table(found))
    shown = console.export_text()
    assert "ckpt_000400.pt" in shown and "node7:41, rank 1, job 9120, requeue 2" in shown
    assert "DIFFERS: optimizer: nothing of it is held now" in shown and "not judged: its record" in shown
    md = report.markdown(found)
    assert md.splitlines()[0] == "### resumeproof watch: 3 restarts, 1 not restored exactly, 1 not judged"
    assert len([row for row in md.splitlines() if row.startswith("| 2026")]) == 3


def test_restarts_not_judged_leave_the_history_exact(tmp_path):
    assert history(tmp_path, watching.EXACT, watching.UNJUDGED).exact


def test_a_folder_without_a_history_is_refused_in_one_line(tmp_path):
    with pytest.raises(report.WatchError, match=r"no resumes\.jsonl"):
        report.read(tmp_path)
