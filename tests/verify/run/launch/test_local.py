"""The default launcher: a process here, its exit code, its log, and where it ran."""

import os
import socket
import sys

import pytest

from resumeproof.common import codec
from resumeproof.verify.run.launch import LaunchError
from resumeproof.verify.run.launch.local import Local


def test_a_local_process_records_this_host_one_attempt_no_job_and_the_devices_it_was_given(tmp_path):
    log = tmp_path / "t.log"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "1"}
    ran = Local().launch([sys.executable, "-c", "print('trained'); raise SystemExit(4)"], log, 60, env)
    assert ran.exit_code == 4 and "trained" in log.read_text()
    assert codec.encode(ran.placement) == {
        "launcher": "local",
        "host": socket.gethostname(),
        "job_id": None,
        "attempts": 1,
        "devices": "1",
        "node": None,
    }


def test_a_command_that_does_not_exist_is_one_line_naming_it(tmp_path):
    with pytest.raises(LaunchError, match=r"^cannot start '/no-such-command': No such file or directory$"):
        Local().launch(["/no-such-command"], tmp_path / "t.log", 60, None)
