"""The line a failed trajectory is reported with: the trainer's own words, or the rank that died, never a rule."""

import pytest

from resumeproof.verify.run import failure

TORCHRUN_TAIL = """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-29_20:05:08
  host      : node-b
  rank      : {second} (local_rank: {second})
  exitcode  : {second_code} (pid: 20236)
  error_file: <N/A>
  traceback : -
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_20:05:08
  host      : node-a
  rank      : 0 (local_rank: 0)
  exitcode  : {first_code} (pid: 20235)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def said(tmp_path, text: str) -> str:
    log = tmp_path / "t.log"
    log.write_text(text)
    return failure.said(log)


def test_a_rank_killed_by_a_signal_is_named_although_torchrun_blames_the_rank_that_lost_it(tmp_path):
    head = "train.py [rank 0]: failed: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:17844\n"
    line = said(tmp_path, head + TORCHRUN_TAIL.format(second=1, second_code=-9, first_code=1))
    assert line == "rank 1 (local rank 1, pid 20236 on node-b) was killed by SIGKILL"


def test_a_rank_that_hung_is_named_with_the_timeout_its_peer_reported(tmp_path):
    head = (
        "train.py [rank 0]: failed: RuntimeError: [unbound_buffer.cc:78] Timed out waiting 10000ms\n"
        "W1129 20:45:35.454000 1805 api.py:1028] Sending process 20236 closing signal SIGTERM\n"
        "W1129 20:46:05.455000 1805 api.py:1047] Unable to shutdown process 20236 via 15, forcefully exiting via 9\n"
    )
    line = said(tmp_path, head + TORCHRUN_TAIL.format(second=1, second_code=-9, first_code=1))
    assert line.startswith("rank 1 (local rank 1, pid 20236 on node-b) hung: torchrun killed it after SIGTERM")
    assert line.endswith("; train.py [rank 0]: failed: RuntimeError: [unbound_buffer.cc:78] Timed out waiting 10000ms")


def test_a_ranks_own_error_line_is_quoted(tmp_path):
    head = "train.py [rank 0]: error: --output runs/x: already exists; refusing to touch it\n"
    line = said(tmp_path, head + TORCHRUN_TAIL.format(second=1, second_code=-15, first_code=2))
    assert line == "train.py [rank 0]: error: --output runs/x: already exists; refusing to touch it"


def test_a_rank_that_said_nothing_recognisable_is_named_with_the_last_exception(tmp_path):
    head = "Traceback (most recent call last):\n  File 'x.py'\nValueError: bad batch\n"
    line = said(tmp_path, head + TORCHRUN_TAIL.format(second=1, second_code=-15, first_code=1))
    assert line == "rank 0 (local rank 0) exited with status 1: ValueError: bad batch"


@pytest.mark.parametrize("tail", ["", "\n=====\n", "\n------\n\n", "\nW1129 20:01:35.574000 19043 run.py:874] ***\n"])
def test_a_plain_process_is_quoted_by_its_last_line_that_says_something(tmp_path, tail):
    assert said(tmp_path, "starting\nmy_train.py: error: no such file data.csv" + tail) == (
        "my_train.py: error: no such file data.csv"
    )


def test_a_jobs_own_error_is_quoted_before_the_lines_slurm_adds_to_its_output(tmp_path):
    """A job's output ends with srun's and slurmstepd's words on the task's exit: the trainer's line says why."""
    slurm = "\nsrun: error: n2: task 0: Exited with exit code 1\nslurmstepd-n2: error: *** STEP 8.0 CANCELLED ***\n"
    assert said(tmp_path, "RuntimeError: config.yaml exists" + slurm) == "RuntimeError: config.yaml exists"
    assert said(tmp_path, slurm) == "slurmstepd-n2: error: *** STEP 8.0 CANCELLED ***"  # nothing else was said
