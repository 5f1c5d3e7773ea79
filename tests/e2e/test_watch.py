"""`resumeproof watch`: a long run's own restarts audited where they happen (docs/long-runs.md), on a plain loop that
resumes by itself (tests/trainers/watched_loop.py): SIGKILLed, preempted by SIGTERM, restarted; every restart judged
before its first update, a part dropped only on the SIGTERM path named (and stopped under --on-mismatch stop), a
torn record never read as a mismatch, and the watched run's losses those of the same run unwatched; under torchrun,
a checkpoint rank 0 saves alone and a DCP folder every rank writes."""

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from resumeproof.common import watching
from tests.helpers import REPO

TRAINER = Path(__file__).resolve().parents[1] / "trainers" / "watched_loop.py"
WATCH = [sys.executable, "-B", "-m", "resumeproof", "watch"]
STEPS = 12


def watched(out: Path, *flags: str, on_mismatch: str = "warn") -> subprocess.CompletedProcess:
    """One start of the loop under `resumeproof watch`, its watch folder OUT/watch."""
    argv = [*WATCH, "--run", str(out / "watch"), "--on-mismatch", on_mismatch, "--"]
    argv += [sys.executable, "-B", str(TRAINER), "--out", str(out), "--steps", str(STEPS), *flags]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def report(out: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([*WATCH, "--report", str(out / "watch"), *flags], capture_output=True, text=True)


def restarts(out: Path) -> list[watching.Restart]:
    found, unread = watching.read_restarts(out / "watch")
    assert unread == 0
    return found


def losses(out: Path) -> dict[int, str]:
    """Each update's loss, the last one written for it (a restart runs again the updates after its checkpoint)."""
    return dict(line.split() for line in (out / "loss.txt").read_text().splitlines())  # type: ignore[misc]


def test_a_run_killed_then_preempted_is_audited_exact_at_each_restart_and_trains_as_if_unwatched(tmp_path):
    run = tmp_path / "run"
    assert watched(run, "--die-after", "5").returncode == -9  # SIGKILL after update 5: its checkpoint is update 4's
    second = watched(run, "--term-after", "8")  # SIGTERM: the handler saves after update 9, then exits
    assert second.returncode == 0, second.stderr
    assert "resumeproof watch: restored exactly from" in second.stderr
    assert watched(run).returncode == 0
    found = restarts(run)
    assert [(r.status, r.saved_update) for r in found] == [(watching.EXACT, 4), (watching.EXACT, 9)]
    assert len({r.process["pid"] for r in found}) == 2 and all(r.process["host"] for r in found)
    line = json.loads((run / "watch" / watching.RESUMES).read_text().splitlines()[0])
    assert line["format"] == watching.FORMAT and line["digest"] == found[0].digest
    shown = report(run)
    assert shown.returncode == 0 and "2 restarts, 0 not restored exactly" in shown.stdout
    plain = tmp_path / "plain"  # the same run, unwatched and never stopped: the watch changed nothing it computed
    subprocess.run([sys.executable, "-B", str(TRAINER), "--out", str(plain), "--steps", str(STEPS)], check=True)
    assert losses(run) == losses(plain) and len(losses(plain)) == STEPS


@pytest.mark.parametrize(
    ("dropped", "part"), [("optimizer", "optimizer"), ("scheduler", "scheduler"), ("rng", "rng-torch")]
)
def test_a_part_dropped_only_when_resumed_from_a_sigterm_checkpoint_is_named_and_stop_ends_it_before_training(
    tmp_path, dropped, part
):
    """The bug a CI run never takes: the periodic checkpoints restore every part, the one the SIGTERM handler wrote
    leaves PART as built. The restart from it is caught before its first update; under stop it ends there, nothing
    trained and nothing saved over the good checkpoint."""
    run = tmp_path / "run"
    assert watched(run, "--die-after", "3", "--sigterm-drops", dropped).returncode == -9
    assert watched(run, "--term-after", "5", "--sigterm-drops", dropped).returncode == 0  # periodic: exact
    checkpoint, logged = (run / "ckpt.pt").read_bytes(), (run / "loss.txt").read_text()
    stopped = watched(run, "--sigterm-drops", dropped, on_mismatch="stop")
    assert stopped.returncode == watching.STOP_EXIT, stopped.stderr
    assert f"NOT restored exactly from {run / 'ckpt.pt'} (saved after update 6): {part}: " in stopped.stderr
    assert (run / "ckpt.pt").read_bytes() == checkpoint and (run / "loss.txt").read_text() == logged
    warned = watched(run, "--sigterm-drops", dropped)  # warn: said, and the run goes on
    assert warned.returncode == 0 and "NOT restored exactly" in warned.stderr
    found = restarts(run)
    assert [r.status for r in found] == [watching.EXACT, watching.DIFFERS, watching.DIFFERS]
    assert [r.stopped for r in found] == [False, True, False]
    assert part in [d["part"] for d in found[1].differences]
    assert "model" not in [d["part"] for d in found[1].differences]  # what it did restore is never named
    table, summary = report(run), report(run, "--markdown")
    assert table.returncode == 1 and summary.returncode == 1
    assert summary.stdout.startswith("### resumeproof watch: 3 restarts, 2 not restored exactly")
    assert f"DIFFERS: {part}: " in summary.stdout


@pytest.mark.parametrize("forgets", [False, True], ids=["keeps-its-place", "starts-its-epoch-over"])
def test_a_restart_fed_another_batch_than_the_update_after_the_save_names_the_data_alone(tmp_path, forgets):
    """A loop over a dataset in shuffled epochs, its place in the epoch saved. Every part of its state restored, a
    resume that starts its epoch over is fed another batch than the run was after the save: the data's part named,
    and nothing else; one that keeps its place is exact, its batch judged."""
    run = tmp_path / "run"
    assert watched(run, "--data", "epochs", "--die-after", "5").returncode == -9  # its checkpoint: update 4's
    flags = ["--data", "epochs", *(["--forgets-position"] if forgets else [])]
    resumed = watched(run, *flags, on_mismatch="stop")
    assert resumed.returncode == (watching.STOP_EXIT if forgets else 0), resumed.stderr
    (restart,) = restarts(run)
    assert restart.note is None and restart.saved_update == 4  # the batch after the save was recorded: judged
    assert restart.status == (watching.DIFFERS if forgets else watching.EXACT)
    assert restart.differences == ([{"part": "data", "how": watching.FED_OTHERWISE}] if forgets else [])


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("torn", "is unreadable"),  # cut short: a damaged disk, a partial copy (the writes themselves are atomic)
        ("missing", "no record of this file"),  # the process ended between its save and the record
    ],
)
def test_a_checkpoint_whose_record_is_torn_or_missing_is_not_judged_never_passed_over_nor_a_mismatch(
    tmp_path, damage, said
):
    run = tmp_path / "run"
    assert watched(run, "--die-after", "5").returncode == -9
    records = sorted((run / "watch" / watching.SAVES).glob("*.json"), key=lambda p: p.stat().st_mtime)
    newest = records[-1]  # the record of the checkpoint the restart loads: the last save's
    if damage == "torn":
        newest.write_text(newest.read_text()[:40])
    else:
        newest.unlink()
    second = watched(run)
    assert second.returncode == 0 and "not judged: " in second.stderr, second.stderr
    assert [r.status for r in restarts(run)] == [watching.UNJUDGED]
    assert said in (restarts(run)[0].note or "")
    assert report(run).returncode == 0


def test_a_long_run_under_chaos_is_watched_at_every_restart_and_never_falsely_alarmed(tmp_path):
    """`resumeproof chaos` on the reference trainer (signals aimed inside its checkpoint writes, SIGKILLs, SIGTERM
    stops, SIGUSR1 snapshots; `--resume auto` after each), every process watched: each restart is judged exact, or
    unjudged where a kill landed between a save and its record, never differs; and the run lost nothing."""
    chaos = [sys.executable, "-B", "-m", "resumeproof", "chaos", "--output", str(tmp_path / "chaos")]
    chaos += ["--kills", "8", "--steps", "16", "--seed", "3"]
    done = subprocess.run([*WATCH, "--run", str(tmp_path / "watch"), "--", *chaos], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    found = restarts(tmp_path)
    assert [r for r in found if r.status == watching.DIFFERS] == []
    starts = json.loads((tmp_path / "chaos" / "verification.json").read_text())["trainer_starts"]
    # every restart audited (a SIGKILL before its first update aside: it left nothing to say), each exact but where
    # there was nothing to judge
    assert 2 <= len(found) <= starts - 1 and sum(r.status == watching.EXACT for r in found) >= 1
    unjudged = [r.note for r in found if r.status != watching.EXACT]
    assert all("no record" in note or "ended before its first update" in note for note in unjudged if note)


DDP = Path(__file__).resolve().parents[1] / "trainers" / "watched_ddp.py"


@pytest.mark.parametrize("bug", [False, True], ids=["every-rank-restores", "rank-1-skips-the-optimizer"])
def test_under_torchrun_each_rank_restart_is_judged_against_the_checkpoint_rank_0_saved(tmp_path, bug):
    """Rank 0 saves alone; every rank loads. Each rank's restore is judged and said apart; rank 0's record holds
    rank 0's generators, which no other rank's are held to (said, never a false alarm)."""
    run = tmp_path / "run"
    torchrun = [sys.executable, "-B", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    argv = [*WATCH, "--run", str(run / "watch"), "--", *torchrun, str(DDP), "--out", str(run)]
    argv += ["--rank0-only-optimizer"] if bug else []
    for _ in range(2):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
    by_rank = {r.process["rank"]: r for r in restarts(run)}
    assert sorted(by_rank) == [0, 1] and by_rank[0].status == watching.EXACT
    assert by_rank[1].note == "its generators and batch not judged: rank 0 saved alone"
    assert by_rank[1].status == (watching.DIFFERS if bug else watching.EXACT)
    if bug:
        assert [d["part"] for d in by_rank[1].differences] == ["optimizer"]


@pytest.fixture(scope="module")
def dcp_run(tmp_path_factory) -> Path:
    """The reference trainer under torchrun at 2 processes, watched: its checkpoint a DCP folder every rank writes."""
    folder = tmp_path_factory.mktemp("dcp")
    done = subprocess.run(dcp_watched(folder, "--steps", "4", "--output", str(folder / "run")), **RUN)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


RUN: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 240}


def dcp_watched(folder: Path, *flags: str) -> list[str]:
    torchrun = [sys.executable, "-B", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    return [*WATCH, "--run", str(folder / "watch"), "--", *torchrun, str(REPO / "train.py"), *flags]


@pytest.mark.parametrize("omit", [None, "optimizer"])
def test_a_dcp_checkpoint_is_recorded_by_every_rank_and_each_ranks_restart_is_judged(tmp_path, dcp_run, omit):
    """dcp.save and dcp.load, as torch.save's and torch.load's (the folder named by its `.metadata`): each rank records
    its own state, its own generators with it, and each rank's restart is held to its own record; a resume without
    the optimizer's state is named on both ranks."""
    watch = tmp_path / "watch"
    shutil.copytree(dcp_run / "watch", watch)
    flags = ["--steps", "6", "--output", str(tmp_path / "resumed"), "--resume", str(dcp_run / "run" / "checkpoint.pt")]
    done = subprocess.run(dcp_watched(tmp_path, *flags, *([f"--omit={omit}"] if omit else [])), **RUN)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name.split(".")[1] for p in (watch / watching.SAVES).glob("*.json")) == [
        "rank-0",
        "rank-0",
        "rank-1",
        "rank-1",
    ]
    by_rank = {r.process["rank"]: r for r in restarts(tmp_path)}
    assert sorted(by_rank) == [0, 1]  # each rank's own record: the generators judged, the batch not (the last save)
    assert all(
        r.note == "its batch not judged: the saving process made no update after the save" for r in by_rank.values()
    )
    for restart in by_rank.values():
        assert restart.checkpoint == str(dcp_run / "run" / "checkpoint.pt") and restart.saved_update == 4
        assert restart.status == (watching.DIFFERS if omit else watching.EXACT)
        assert omit is None or restart.differences[0]["part"] == "optimizer"


def test_a_restart_with_no_update_left_to_make_has_its_line_unjudged(tmp_path):
    """A run already at its end, started again (a requeue after its last save): it loads the checkpoint and trains
    nothing; there is no first update to hold the record against, and the line says so."""
    run = tmp_path / "run"
    assert watched(run).returncode == 0 and watched(run).returncode == 0
    (restart,) = restarts(run)
    assert restart.status == watching.UNJUDGED and "ended before its first update" in (restart.note or "")
    assert report(run).returncode == 0


def test_a_file_the_run_did_not_save_is_no_restart_and_a_fresh_start_writes_no_line(tmp_path):
    """Weights loaded at the start of a fresh run (a pretrained file) were never saved by it: nothing to judge."""
    run = tmp_path / "run"
    pretrained = tmp_path / "pretrained.pt"
    code = f"import torch; torch.save({{'w': torch.ones(3)}}, {str(pretrained)!r})"
    subprocess.run([sys.executable, "-B", "-c", code], check=True)
    argv = [*WATCH, "--run", str(run / "watch"), "--", sys.executable, "-B", "-c"]
    loads = f"import torch; torch.load({str(pretrained)!r}); torch.nn.Linear(2, 1)(torch.ones(1, 2)).sum().backward()"
    assert subprocess.run([*argv, loads], capture_output=True, text=True).returncode == 0
    assert not (run / "watch" / watching.RESUMES).exists()
    said = report(run)
    assert said.returncode == 2 and f"no {watching.RESUMES}" in said.stderr


def test_the_exported_environment_watches_a_command_another_launcher_starts(tmp_path):
    """sbatch scripts, torchrun: `eval "$(resumeproof watch --run DIR --env)"` and the command as it was."""
    run = tmp_path / "run"
    exports = subprocess.run([*WATCH, "--run", str(run / "watch"), "--env"], capture_output=True, text=True, check=True)
    assert f"export {watching.WATCH_ENV}=" in exports.stdout
    train = shlex.join([sys.executable, "-B", str(TRAINER), "--out", str(run), "--steps", str(STEPS)])
    script = (
        f'eval "$({shlex.join(WATCH)} --run {shlex.quote(str(run / "watch"))} --env)"\n{train} --die-after 3\n{train}'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert "restored exactly from" in done.stderr, done.stderr
    assert [r.status for r in restarts(run)] == [watching.EXACT]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--", "true"], "--run is required"),
        (["--report", "x", "--", "true"], "--report takes the watch folder alone"),
        (["--run", "x"], "no command to watch"),
    ],
)
def test_what_cannot_be_watched_is_refused_in_one_line(tmp_path, args, said):
    done = subprocess.run([*WATCH, *args], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


DROPPED_OPTIMIZER = ("--sigterm-drops", "optimizer")


def _until(condition, what: str, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {within:g} s"
        time.sleep(0.2)


@pytest.mark.xdist_group("slurm")  # one worker, one cluster (tests/kit/test_requeue.py's)
@pytest.mark.parametrize(
    ("flags", "status"), [((), watching.EXACT), (("--sigterm-drops", "optimizer"), watching.DIFFERS)]
)
def test_a_job_requeued_by_the_real_slurm_is_audited_on_its_restart_with_its_job_and_restart_count(
    slurm_cluster, tmp_path, flags, status
):
    """The batch script a user writes, the watch's exports first: `scontrol requeue` stops the job (SIGTERM: the loop
    saves), Slurm starts it again (SLURM_RESTART_COUNT=1), and the restart is judged: exact, or the optimizer the
    SIGTERM path drops named; never a false alarm on the exact one."""
    run, watch_folder = tmp_path / "run", tmp_path / "watch"
    train = [sys.executable, "-B", str(TRAINER), "--out", str(run), "--steps", "40", "--pace", "0.2", *flags]
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --requeue\n"
        f"#SBATCH --output={tmp_path}/job-%j.out\n#SBATCH --open-mode=append\n"
        f'eval "$({shlex.join(WATCH)} --run {shlex.quote(str(watch_folder))} --env)"\n'
        f"srun {shlex.join(train)}\n"
    )
    job_id = slurm_cluster.command("sbatch", "--parsable", str(script)).strip()
    _until(lambda: (run / "loss.txt").is_file() and len((run / "loss.txt").read_text().splitlines()) >= 5, "update 5")
    slurm_cluster.command("scontrol", "requeue", job_id)

    def checked() -> bool:  # the hold Slurm puts on a requeued job (its BeginTime) released once it is pending
        state = slurm_cluster.command("squeue", "-h", "-j", job_id, "-o", "%T").strip()
        if state == "PENDING":
            slurm_cluster.command("scontrol", "update", f"JobId={job_id}", "StartTime=now")
        return (watch_folder / watching.RESUMES).is_file()

    _until(checked, "the restart's check")
    slurm_cluster.command("scancel", job_id)  # the restart's check is what is tested: the rest of the run is not
    (restart,) = restarts(tmp_path)
    assert restart.status == status, (tmp_path / f"job-{job_id}.out").read_text()
    assert (restart.process["job"], restart.process["restart"]) == (job_id, "1")
    assert restart.saved_by["job"] == job_id and restart.saved_by["restart"] is None
    if status == watching.DIFFERS:
        assert restart.differences[0]["part"] == "optimizer"
