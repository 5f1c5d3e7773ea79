"""--reuse-runs without a trainer (verify/run/reuse.py): an earlier verification written by hand, its run copied only
where the run key and every recorded source file match, each other case refused with its reason."""

import json
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from resumeproof.common import observation
from resumeproof.verify.run import reuse
from resumeproof.verify.run.trajectories import Observe, Trajectory
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.status import Status
from tests.verify.test_settings import VERIFY


def planned(
    output: Path, name: str = "continuous", argv: tuple[str, ...] = ("python", "train.py"), **more
) -> Trajectory:
    """A trajectory as the plan makes it: its folder, log and records under `output`."""
    watch = Observe(record=output / "observed" / name, updates=frozenset({1, 2}))
    return Trajectory(
        name, [*argv, str(output / name)], output / name, output / "logs" / f"{name}.log", observe=watch, **more
    )


def fresh(output: Path) -> Path:
    """A verification's folder as it starts: its logs and records folders, nothing run."""
    (output / "logs").mkdir(parents=True)
    (output / "observed").mkdir()
    return output


VERIFY_LAUNCH = Settings(**VERIFY).launch


def reuser(output: Path, previous: Path | None) -> Callable[[Trajectory], bool]:
    """What a verification into OUTPUT with --reuse-runs PREVIOUS asks of each trajectory before it runs."""
    return reuse.reuser(previous, output, VERIFY_LAUNCH)


@pytest.fixture
def earlier(tmp_path, monkeypatch):
    """A verification in tmp/a whose continuous run loaded tmp/train.py and tmp/helper.py; the next goes in tmp/b."""
    monkeypatch.chdir(tmp_path)
    sources = {name: tmp_path / name for name in ("train.py", "helper.py")}
    for path in sources.values():
        path.write_text("print('training')\n")
    a = tmp_path / "a"
    t = planned(a)
    reuser(a, None)(t)  # records its run key, as every verification does
    for folder in (t.output, t.log.parent, t.observe.record.parent):
        folder.mkdir(parents=True, exist_ok=True)
    (t.output / "ckpt_3.pt").write_bytes(b"weights")
    t.log.write_text("the log\n")
    stats = {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in sources.values()}
    record = {"format": observation.FORMAT, "updates": {}, observation.SOURCES: stats}
    observation.record_file(t.observe.record, None).write_text(json.dumps(record))
    (t.observe.record.parent / "continuous-repeat.json").write_text("{}")  # another trajectory's: never copied
    runs = {"continuous": {"status": Status.DONE, "exit_code": 0, "run_key": t.outcome.run_key, "ran_on": None}}
    (a / "verification.json").write_text(json.dumps({"trajectories": runs}))
    return a, sources


def test_a_run_made_the_same_way_from_the_same_files_is_copied_with_its_folder_log_and_record_alone(earlier, tmp_path):
    a, _ = earlier
    b = fresh(tmp_path / "b")
    t = planned(b)
    assert reuser(b, a)(t)
    assert (t.outcome.reused_from, t.outcome.not_reused, t.outcome.exit_code) == (a, None, 0)
    assert (b / "continuous" / "ckpt_3.pt").read_bytes() == b"weights" and t.log.read_text() == "the log\n"
    assert sorted(p.name for p in (b / "observed").iterdir()) == ["continuous.json"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda src: src["train.py"].write_text("print('changed')\n"), "train.py changed since"),
        (lambda src: os.utime(src["helper.py"], ns=(1, 1)), "helper.py changed since"),  # same size, touched
        (lambda src: src["helper.py"].unlink(), "helper.py is gone since"),
    ],
    ids=["script-rewritten", "import-touched", "import-gone"],
)
def test_a_source_file_changed_touched_or_gone_runs_again_naming_it(earlier, tmp_path, change, said):
    a, sources = earlier
    change(sources)
    t = planned(tmp_path / "b")
    assert not reuser(tmp_path / "b", a)(t)
    assert t.outcome.not_reused == said and t.outcome.reused_from is None and not t.output.exists()


def test_another_command_observer_setting_or_environment_is_another_run(earlier, tmp_path, monkeypatch):
    a, _ = earlier
    b = fresh(tmp_path / "b")
    cases = {
        "its command differs": planned(b, argv=("python", "train.py", "--steps", "7")),
        "its observer differs": replace(planned(b), observe=Observe(b / "observed" / "continuous", "1-3")),
    }
    for said, t in cases.items():
        assert not reuser(b, a)(t) and t.outcome.not_reused == said
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")  # volatile: not part of the run
    assert reuser(b, a)(planned(b))
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    t = planned(tmp_path / "c")
    assert not reuser(tmp_path / "c", a)(t) and t.outcome.not_reused == "its environment differs"


def test_the_output_folder_is_read_as_one_token_never_a_prefix_of_another(tmp_path):
    same = [reuse.key(planned(tmp_path / name), tmp_path / name, VERIFY_LAUNCH) for name in ("a", "b")]
    assert same[0] == same[1]
    inside = planned(tmp_path / "a", argv=("python", "train.py", "--data", str(tmp_path / "ab")))
    other = planned(tmp_path / "b", argv=("python", "train.py", "--data", str(tmp_path / "bb")))
    # /tmp/a in /tmp/ab is not the output folder: the two commands name other data, and differ
    assert (
        reuse.key(inside, tmp_path / "a", VERIFY_LAUNCH)["command"]
        != reuse.key(other, tmp_path / "b", VERIFY_LAUNCH)["command"]
    )


def test_a_run_not_done_there_keyless_recordless_or_whose_input_ran_again_runs_again(earlier, tmp_path):
    a, _ = earlier
    document = json.loads((a / "verification.json").read_text())
    run = document["trajectories"]["continuous"]
    b, reused = tmp_path / "b", reuser(tmp_path / "b", a)
    resumed = planned(b, "resumed", after=("continuous",))
    assert not reused(resumed) and resumed.outcome.not_reused == "continuous ran again"
    for change, said in [
        ({"status": "failed"}, "not done there"),
        ({"run_key": None}, "no run key recorded there (an earlier resumeproof)"),
    ]:
        (a / "verification.json").write_text(json.dumps({"trajectories": {"continuous": {**run, **change}}}))
        t = planned(b)
        assert not reuser(b, a)(t) and t.outcome.not_reused == said
    (a / "verification.json").write_text(json.dumps(document))
    record = observation.record_file(a / "observed" / "continuous", None)
    record.write_text(json.dumps({"format": observation.FORMAT, "updates": {}}))
    t = planned(b)
    assert not reuser(b, a)(t) and t.outcome.not_reused == "continuous.json names no source files (an earlier observer)"
    record.unlink()
    assert not reuser(b, a)(t) and t.outcome.not_reused == "no observer record there"


@pytest.mark.parametrize(
    ("write", "said"),
    [
        (None, "not a verification's output folder (no readable verification.json)"),
        ("{", "its verification.json is not JSON"),
        ('{"trajectories": []}', "its verification.json lists no trajectories"),
    ],
)
def test_a_previous_folder_that_is_no_verification_is_refused_in_one_line(tmp_path, write, said):
    if write is not None:
        (tmp_path / "verification.json").write_text(write)
    with pytest.raises(reuse.ReuseError, match=re.escape(f"--reuse-runs {tmp_path}: {said}")):
        reuse.read(tmp_path)
