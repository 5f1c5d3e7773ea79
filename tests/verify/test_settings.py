"""What a verification or a chaos run is asked to do: the options parsed once, and every rule the command line
checks held again by the settings object itself (a value built in code obeys it too)."""

import math
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from resumeproof import cli
from resumeproof.common.observation import EXIT
from resumeproof.verify import settings
from resumeproof.verify.chaos.settings import ChaosSettings
from resumeproof.verify.run.launch import Launch, SlurmSignal
from resumeproof.verify.settings import (
    PointsFrom,
    ReadOff,
    Settings,
    SettingsError,
    parse_faults,
    parse_interrupt_at,
    parse_segments,
    parse_slurm_signal,
)

VERIFY = {
    "output": Path("/r"),
    "steps": 10,
    "interrupt_at": settings.Given((5,)),
    "atol": 1e-12,
    "train_cmd": "t",
    "jobs": 2,
    "timeout": 60.0,
}
CHAOS = {"output": Path("/c"), "train": ["t"], "kills": 2, "steps": 6, "checkpoint_every": 1, "seed": 0}


@pytest.mark.parametrize(
    ("spec", "points"),
    [("5", (5,)), ("1,4,6,9", (1, 4, 6, 9)), ("9,5,1", (5, 9, 1)), ("all", (5, 1, 2, 3, 4, 6, 7, 8, 9))],
)
def test_interruption_points_put_the_default_point_first_when_chosen(spec, points):
    assert parse_interrupt_at(spec, 10) == settings.Given(points)


@pytest.mark.parametrize("spec", ["0", "10", "3,3", "", "a,b"])
def test_bad_interruption_points_are_refused(spec):
    with pytest.raises(SettingsError):
        parse_interrupt_at(spec, 10)


def test_faults_all_waits_for_the_parts_the_trainer_declares_and_duplicates_collapse():
    assert parse_faults("all") == ("all",)  # resolved from meta.parts once the primary point ran
    assert parse_faults("data,model,data") == ("data", "model")
    assert parse_faults("weights,rng") == ("weights", "rng")  # a trainer's own part names
    with pytest.raises(SettingsError, match="a part is a lower-case name"):
        parse_faults("Weights!")


def test_segments_must_sum_to_the_steps():
    assert parse_segments(("3,3,4", "5,5"), 10) == ((3, 3, 4), (5, 5))
    for bad in ("3,3", "10", "0,10", "4,-1,7"):
        with pytest.raises(SettingsError):
            parse_segments((bad,), 10)


def refused_by_the_command(tmp_path, *args: str) -> str:
    """The command's usage error (exit 2) for `args`, and nothing created."""
    result = CliRunner().invoke(cli.main, [args[0], "--output", str(tmp_path / "out"), *args[1:]])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists()
    return result.output


@pytest.mark.parametrize(
    ("flag", "given", "field", "value"),
    [
        ("--steps", "1", "steps", 1),
        ("--jobs", "0", "jobs", 0),
        ("--atol", "inf", "atol", math.inf),
        ("--atol", "-1e-12", "atol", -1e-12),
        ("--timeout", "0", "timeout", 0.0),
        ("--timeout", "nan", "timeout", math.nan),
        ("--interrupt-at", "10", "points", (10,)),
        ("--segments", "3,3", "segments", ((3, 3),)),
        ("--faults", "Model", "faults", ("Model",)),
        ("--train-cmd", " ", "train_cmd", " "),
    ],
)
def test_the_command_and_the_verification_settings_refuse_the_same_values(tmp_path, flag, given, field, value):
    assert flag in refused_by_the_command(tmp_path, "verify", flag, given)
    with pytest.raises(SettingsError) as refused:
        settings_of({**VERIFY, field: value})
    assert refused.value.flag == flag


SCRIPT = ("--observe", "--train-cmd", "t {run} {steps}", "--resume-cmd", "t {run} {steps} {checkpoint}")
SCRIPT_FIELDS = {"observe_script": True, "train_cmd": SCRIPT[2], "resume_cmd": SCRIPT[4], "checkpoint": "{run}/c"}
SCRIPT_OWN = ("checkpoint", "stop", "resume_from_run", "epochs", "epoch_updates")  # --observe's own: a Script's
TRAINER_OWN = ("segments", "cadence", "repeat", "observe", "plot", "allow", "torch_load")  # a Trainer's fields


def settings_of(fields: dict) -> Settings:
    """Settings from flat fields as the command line gives them: `points` (or `points_from` with the points still
    to be read off) into --interrupt-at's form; a trainer's own options into its `Trainer`, or with `observe_script`
    --observe's own into its `Script` as the command line builds it (settings.parse_script)."""
    points, source = fields.get("points", ()), fields.get("points_from")
    interrupt_at = settings.ReadOff(source, points) if source is not None else settings.Given(points)
    scripted = fields.get("observe_script")
    own = (*(SCRIPT_OWN if scripted else TRAINER_OWN), "observe_script", "points", "points_from")
    rest = {k: v for k, v in fields.items() if k not in own}  # a script's option for a trainer: a TypeError
    if "points" in fields or source is not None:
        rest["interrupt_at"] = interrupt_at
    if not scripted:
        return Settings(**rest, subject=settings.Trainer(**{k: v for k, v in fields.items() if k in TRAINER_OWN}))
    script = {"stop": EXIT, "resume_from_run": False, **{k: fields.get(k) for k in SCRIPT_OWN if k in fields}}
    parsed = settings.parse_script(script["checkpoint"], script["stop"], script["resume_from_run"])
    more = {k: script[k] for k in ("epochs", "epoch_updates") if k in script}
    return Settings(**rest, subject=replace(parsed, **more))


@pytest.mark.parametrize(
    ("flag", "given", "field", "value"),
    [
        ("--checkpoint", None, "checkpoint", None),
        ("--checkpoint", "/c/{step}", "checkpoint", "/c/{step}"),
        ("--resume-cmd", "t {run} {steps}", "resume_cmd", "t {run} {steps}"),
        ("--faults", "ema", "faults", ("ema",)),
        ("--train-cmd", "t {steps}", "train_cmd", "t {steps}"),
    ],
)
def test_a_scripts_command_and_its_settings_refuse_the_same_values(tmp_path, flag, given, field, value):
    """--observe's rules live in the one Settings type: the command line and a value built in code say the same."""
    typed = dict(zip(SCRIPT[1::2], SCRIPT[2::2], strict=True)) | {"--checkpoint": "{run}/c"}
    typed = typed | {flag: given} if given is not None else {k: v for k, v in typed.items() if k != flag}
    said = refused_by_the_command(tmp_path, "verify", "--observe", *(x for pair in typed.items() for x in pair))
    assert flag in said
    with pytest.raises(SettingsError) as refused:
        settings_of({**VERIFY, **SCRIPT_FIELDS, field: value})
    assert refused.value.flag == flag
    assert settings_of({**VERIFY, **SCRIPT_FIELDS}).scripted.checkpoint == "{run}/c"


def test_resume_from_run_frees_the_resume_command_of_checkpoint_and_keeps_the_checkpoint_in_the_copied_folder():
    """Each resume's {run} is a copy of the interrupted run's folder: {checkpoint} is optional, and a checkpoint
    outside {run} would not be in the copy."""
    from_run = {**VERIFY, **SCRIPT_FIELDS, "resume_cmd": "t {run} {steps} --init_from=resume", "resume_from_run": True}
    assert settings_of(from_run).scripted.resume_from_run
    with pytest.raises(SettingsError) as refused:
        settings_of({**from_run, "checkpoint": "/elsewhere/{run}.pt"})
    assert refused.value.flag == "--checkpoint" and "must lie in {run}" in refused.value.message
    with pytest.raises(SettingsError, match=r"lacks \{checkpoint\}"):  # without it, the resume must be told
        settings_of({**from_run, "resume_from_run": False})
    assert settings_of({**VERIFY, **SCRIPT_FIELDS, "checkpoint": "/elsewhere/{run}.pt"}).scripted.checkpoint


def test_resume_from_run_is_refused_for_a_protocol_trainer_by_the_command_and_has_no_place_in_its_settings(tmp_path):
    """--observe's own options are a `Script`'s fields: a protocol trainer's settings have none to set."""
    said = refused_by_the_command(tmp_path, "verify", "--resume-from-run")
    assert "--resume-from-run applies only with --observe" in said
    with pytest.raises(TypeError, match="resume_from_run"):
        Settings(**VERIFY, resume_from_run=True)


def test_settings_inferring_their_points_may_hold_none_until_the_continuous_run_gives_them():
    assert Settings(**{**VERIFY, "interrupt_at": ReadOff(PointsFrom.EPOCHS)}).points == ()
    with pytest.raises(SettingsError, match="--interrupt-at"):
        Settings(**{**VERIFY, "interrupt_at": settings.Given(())})


@pytest.mark.parametrize(
    ("flag", "given", "field", "value"),
    [
        ("--kills", "0", "kills", 0),
        ("--steps", "1", "steps", 1),
        ("--pace", "0", "pace", 0.0),
        ("--pace", "nan", "pace", math.nan),
        ("--timeout", "0.5", "timeout", 0.5),
        ("--kill", "node", "kill", "node"),
        ("--train-cmd", " ", "train", []),
    ],
)
def test_the_command_and_the_chaos_settings_refuse_the_same_values(tmp_path, flag, given, field, value):
    assert flag in refused_by_the_command(tmp_path, "chaos", flag, given)
    with pytest.raises(SettingsError) as refused:
        ChaosSettings(**{"pace": 0.05, "timeout": 60.0, **CHAOS, field: value})
    assert refused.value.flag == flag


@pytest.mark.parametrize("every", [0, -1])
def test_chaos_refuses_a_run_without_a_cadence_and_says_why(tmp_path, every):
    """0 is the trainer's "never": generations only when a signal asks. The chaos run aims its signals inside
    the generations' writes and resumes each SIGKILL from one, so it needs a cadence."""
    said = refused_by_the_command(tmp_path, "chaos", "--checkpoint-every", str(every))
    assert "--checkpoint-every" in said and "chaos needs a cadence >= 1" in said
    with pytest.raises(SettingsError, match="chaos needs a cadence >= 1") as refused:
        ChaosSettings(**{"pace": 0.05, "timeout": 60.0, **CHAOS, "checkpoint_every": every})
    assert refused.value.flag == "--checkpoint-every"


EPOCH_SCRIPT = {
    **VERIFY,
    "steps": 0,
    "observe_script": True,
    "train_cmd": "t --epochs {epochs} --out {run}",
    "resume_cmd": "t --epochs {epochs} --out {run} --resume {checkpoint}",
    "checkpoint": "{run}/checkpoint-{epoch}.pth.tar",
    "epochs": 3,
}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"epochs": 0, "steps": 10}, "--epochs: is required: --train-cmd 't --epochs {epochs} --out {run}' takes"),
        ({"train_cmd": "t --out {run}"}, "--train-cmd: 't --out {run}' lacks {epochs}: with --epochs every process"),
        ({"train_cmd": "t {epochs} {steps} {run}"}, "takes {steps}: with --epochs the run length is {epochs}"),
        ({"steps": 12, "epoch_updates": 5}, "--steps: does not apply with --epochs"),
        (
            {"checkpoint": "{run}/last.pth.tar", "points_from": PointsFrom.CHECKPOINTS},
            "--interrupt-at: checkpoints needs {step}",
        ),
    ],
)
def test_epochs_and_checkpoints_are_refused_in_one_line_where_the_run_cannot_say_what_they_mean(change, says):
    with pytest.raises(SettingsError, match=says.replace("{", r"\{").replace("}", r"\}")):
        settings_of({**EPOCH_SCRIPT, **change})
    assert settings_of(EPOCH_SCRIPT).deferred and settings_of({**EPOCH_SCRIPT, "steps": 12, "epoch_updates": 4})


def test_an_epoch_pattern_without_epochs_is_refused_by_the_command_before_anything_runs(tmp_path):
    train = "t {run} {steps}"
    args = ("--resume-cmd", train + " {checkpoint}", "--checkpoint", "{run}/checkpoint-{epoch}.pth.tar")
    said = refused_by_the_command(tmp_path, "verify", "--observe", "--train-cmd", train, *args)
    assert "--checkpoint: '{run}/checkpoint-{epoch}.pth.tar' takes {epoch} without --epochs" in said
    assert parse_interrupt_at("checkpoints", 10) == ReadOff(PointsFrom.CHECKPOINTS, ())
    assert parse_interrupt_at("4,8", 0) == settings.Given((4, 8))
    with pytest.raises(SettingsError, match="'all' needs N before the run"):
        parse_interrupt_at("all", 0)


@pytest.mark.parametrize(
    ("args", "flag", "launch"),
    [
        (("--slurm-partition", "gpu"), "--slurm-partition", Launch(partition="gpu")),  # Slurm's flag, local launcher
        (("--slurm-time", "30"), "--slurm-time", Launch(minutes=30)),
        (("--launcher", "slurm", "--slurm-nodes", "0"), "--slurm-nodes", Launch(launcher="slurm", nodes=0)),
        (
            ("--launcher", "slurm", "--slurm-gpus-per-node", "-1"),
            "--slurm-gpus-per-node",
            Launch(launcher="slurm", gpus_per_node=-1),
        ),
        (("--launcher", "slurm", "--slurm-time", "0"), "--slurm-time", Launch(launcher="slurm", minutes=0)),
        (("--ray-address", "http://h:8265"), "--ray-address", Launch(ray_address="http://h:8265")),  # Ray's, local
        (("--launcher", "ray", "--slurm-nodes", "2"), "--slurm-nodes", Launch(launcher="ray", nodes=2)),  # Slurm's, Ray
        (
            ("--launcher", "ray", "--ray-gpus-per-job", "-1"),
            "--ray-gpus-per-job",
            Launch(launcher="ray", gpus_per_job=-1),
        ),
        (("--preempt", "signal"), "--preempt", Launch(preempt="signal")),  # Slurm preempts: no other launcher
        (
            ("--launcher", "slurm", "--preempt", "requeue", "--slurm-nodes", "2"),
            "--preempt",
            Launch(launcher="slurm", preempt="requeue", nodes=2),
        ),
        (
            ("--launcher", "slurm", "--preempt", "requeue", "--slurm-signal", "USR2"),
            "--slurm-signal",
            Launch(launcher="slurm", preempt="requeue", slurm_signal=SlurmSignal("USR2")),
        ),
        (("--launcher", "slurm", "--slurm-signal", "USR2"), "--slurm-signal", Launch(slurm_signal=SlurmSignal("USR2"))),
    ],
)
def test_the_command_and_the_settings_refuse_the_same_launches(tmp_path, args, flag, launch):
    assert flag in refused_by_the_command(tmp_path, "verify", *args)
    with pytest.raises(SettingsError) as refused:
        Settings(**{**VERIFY, "launch": launch})
    assert refused.value.flag == flag


def test_a_launcher_the_verifier_does_not_know_is_refused_by_the_settings():
    with pytest.raises(SettingsError, match="'kubernetes': one of local, slurm, ray") as refused:
        Settings(**{**VERIFY, "launch": Launch(launcher="kubernetes")})
    assert refused.value.flag == "--launcher"


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("USR1", SlurmSignal("USR1")),
        ("sigusr2@90", SlurmSignal("USR2", 90)),
        ("B:USR1@120", SlurmSignal("USR1", 120, batch=True)),
        ("B:TERM", SlurmSignal("TERM", batch=True)),
    ],
)
def test_a_slurm_signal_is_read_as_sbatch_reads_it_and_written_back_the_same(given, read):
    assert parse_slurm_signal(given) == read
    assert parse_slurm_signal(str(read)) == read


@pytest.mark.parametrize("given", ["KILL", "USR1@", "B:", "USR1@-5", "NOPE", "C:USR1"])
def test_a_slurm_signal_no_process_could_catch_or_sbatch_read_is_one_line_naming_it(tmp_path, given):
    with pytest.raises(SettingsError, match="is not \\[B:\\]SIG\\[@SECONDS\\]") as refused:
        parse_slurm_signal(given)
    assert refused.value.flag == "--slurm-signal" and repr(given) in str(refused.value)
    args = ("--launcher", "slurm", "--preempt", "signal", "--slurm-signal", given)
    assert "--slurm-signal: " in refused_by_the_command(tmp_path, "verify", *args)
