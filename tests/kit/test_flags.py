"""The protocol's flags (kit/flags.py): one table (kit/flag_table.py), the same meaning through argparse and click,
and the declared parts in meta."""

import argparse
import contextlib
import io
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit import flags, rundir
from resumeproof.kit.flags import FlagError

PARTS = ("model", "optimizer", "rng-python", "rng-torch", "data")
REFUSED = "refused"


def by_argparse(argv: list[str], long_runs: bool = True) -> kit.ProtocolArgs | str:
    """The ProtocolArgs `flags.parse` gives, or the last line of its refusal."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return flags.parse(argv, parts=PARTS, long_runs=long_runs)
    except SystemExit as exited:
        assert exited.code == 2, err.getvalue()
        return err.getvalue().strip().splitlines()[-1]


def by_click(argv: list[str], long_runs: bool = True) -> kit.ProtocolArgs | str:
    """The ProtocolArgs a click command decorated with `flags.click_options` receives, or its refusal's last line."""
    seen = []

    @click.command()
    @flags.click_options(PARTS, long_runs=long_runs)
    def command(protocol: kit.ProtocolArgs) -> None:
        seen.append(protocol)

    result = CliRunner().invoke(command, argv)
    if result.exit_code == 0:
        return seen[0]
    assert result.exit_code == 2, result.output
    return result.output.strip().splitlines()[-1]


# -- every value means the same on both forms -------------------------------------------------------

# flag -> (typed, what it means: the ProtocolArgs field's value, or REFUSED)
MEANINGS = {
    protocol.STEPS_FLAG: [("5", 5), ("0", 0), ("-1", REFUSED), ("five", REFUSED), ("1.5", REFUSED)],
    protocol.UNTIL_STEP_FLAG: [("9", 9), ("0", 0), ("-3", REFUSED), ("nine", REFUSED)],
    protocol.CHECKPOINT_EVERY_FLAG: [("2", 2), ("0", 0), ("-1", REFUSED), ("often", REFUSED)],
    protocol.KEEP_FLAG: [("1", 1), ("5", 5), ("0", REFUSED), ("-2", REFUSED), ("all", REFUSED)],
    protocol.PACE_FLAG: [
        ("0.25", 0.25),
        ("0", 0.0),
        ("-0.5", REFUSED),
        ("slow", REFUSED),
        ("nan", REFUSED),
        ("inf", REFUSED),
        ("-inf", REFUSED),
    ],
}
VALUES = [(flag, text, meant) for flag, cases in MEANINGS.items() for text, meant in cases]


def argv_with(flag: str, text: str) -> list[str]:
    """A complete command line that sets `flag`; one `--flag=value` token, so that '-inf' reads as a value."""
    counts = [] if flag in (protocol.STEPS_FLAG, protocol.UNTIL_STEP_FLAG) else [f"{protocol.STEPS_FLAG}=1"]
    return [*counts, f"{protocol.OUTPUT_FLAG}=o", f"{flag}={text}"]


@pytest.mark.parametrize(("flag", "text", "meant"), VALUES, ids=[f"{f}={t}" for f, t, _ in VALUES])
def test_every_value_means_the_same_through_argparse_and_click(flag, text, meant):
    argv = argv_with(flag, text)
    through_argparse, through_click = by_argparse(argv), by_click(argv)
    if meant is REFUSED:
        assert isinstance(through_argparse, str) and isinstance(through_click, str), (through_argparse, through_click)
        for message in (through_argparse, through_click):
            assert flag in message and text in message, message
        # One reason, given by the one Flag.value both forms call: only the forms' prefixes differ.
        assert through_argparse.rsplit(": ", 1)[1] == through_click.rsplit(": ", 1)[1]
    else:
        assert through_argparse == through_click
        assert isinstance(through_argparse, kit.ProtocolArgs)
        assert getattr(through_argparse, flags.dest(flag)) == meant


def test_keep_0_is_refused_by_both_forms_and_by_the_objects_that_use_it(tmp_path):
    argv = argv_with(protocol.KEEP_FLAG, "0")
    assert by_argparse(argv).endswith("argument --keep: must be at least 1, not 0")
    assert by_click(argv).endswith("Invalid value for '--keep': must be at least 1, not 0")
    refusal = "--keep: must be at least 1, not 0"  # where the value is used, not only where it is parsed
    for use in (
        lambda: kit.ProtocolArgs(output=Path("o"), steps=1, keep=0),
        lambda: kit.RunDir.create(tmp_path / "run", keep=0),
        lambda: kit.RunDir.in_place(tmp_path / "auto", kit.load_checkpoint, len, print, keep=0),
        lambda: rundir.prune(tmp_path, 0),
    ):
        with pytest.raises(FlagError, match=refusal):
            use()
    assert not (tmp_path / "run").exists() and not (tmp_path / "auto").exists()  # refused before anything is made


def test_checkpoint_every_0_means_never_on_both_forms_and_is_the_default():
    for argv in (argv_with(protocol.CHECKPOINT_EVERY_FLAG, "0"), ["--steps=1", "--output=o"]):
        assert by_argparse(argv).checkpoint_every == by_click(argv).checkpoint_every == 0


def test_absent_long_run_flags_take_the_tables_defaults_on_both_forms():
    argv = ["--until-step=4", "--output=o"]
    assert by_argparse(argv) == by_click(argv)
    assert (by_argparse(argv).keep, by_argparse(argv).pace) == (protocol.DEFAULT_KEEP, 0.0)


@pytest.mark.parametrize(
    ("argv", "long_runs", "problem"),
    [
        (["--steps=1", "--output=o", "--omit=model"], False, "need --resume"),
        (
            ["--steps=1", "--output=o", "--resume=c", "--omit=weights"],
            False,
            "--omit: unknown part weights; valid parts: model, optimizer, rng-python, rng-torch, data",
        ),
        (["--steps=1", "--output=o", "--resume=c", "--omit=model,"], False, "an empty part name"),
        (["--output=o"], False, "--steps is required"),
        (["--output=o"], True, "give exactly one of --steps and --until-step"),
        (["--steps=1", "--until-step=4", "--output=o"], True, "give exactly one of --steps and --until-step"),
        (["--steps=1", "--output=o", "--resume=auto"], False, "--resume auto: this trainer does not continue in place"),
        (["--steps=1"], False, "--output"),
    ],
)
def test_flags_that_do_not_make_sense_are_refused_by_both_forms(argv, long_runs, problem):
    for message in (by_argparse(argv, long_runs), by_click(argv, long_runs)):
        assert isinstance(message, str) and problem in message, message


@pytest.mark.parametrize(
    "argv",
    [
        ["--steps=5", "--output=o", "--resume=c.pt", "--omit=model,data"],
        ["--steps=1", "--output=o", "--resume=c", "--omit-rng-restore"],
        ["--steps=1", "--output=o", "--resume=c", "--omit=data", "--omit-rng-restore"],
        ["--until-step=9", "--output=o", "--resume=auto", "--keep=2", "--pace=0.5", "--checkpoint-every=3"],
    ],
)
def test_the_same_command_line_gives_the_same_protocol_args_on_both_forms(argv):
    assert isinstance(by_argparse(argv), kit.ProtocolArgs)
    assert by_argparse(argv) == by_click(argv)


def test_argparse_flags_give_the_protocol_args():
    args = flags.parse(["--steps", "5", "--output", "o", "--resume", "c.pt", "--omit", "model,data"], parts=PARTS)
    assert args == kit.ProtocolArgs(
        steps=5, output=Path("o"), resume=Path("c.pt"), omit=frozenset({"model", "data"}), parts=PARTS
    )


def test_omit_rng_restore_names_every_rng_part():
    args = flags.parse(["--steps", "1", "--output", "o", "--resume", "c", "--omit-rng-restore"], parts=PARTS)
    assert args.omit == {"rng-python", "rng-torch"}


def test_an_abbreviated_flag_is_never_taken_for_another():
    # argparse's default would read --omit-rng as --omit-rng-restore; the kit's parser refuses abbreviations.
    refused = by_argparse(["--steps", "1", "--output", "o", "--resume", "c", "--omit-rng"])
    assert "unrecognized arguments: --omit-rng" in refused


def test_the_same_flags_inside_a_users_own_argparse_parser():
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--config")
    flags.add_arguments(parser, PARTS, long_runs=True)
    namespace = parser.parse_args(["--config", "x.toml", "--until-step", "9", "--output", "o", "--resume", "auto"])
    args = flags.from_namespace(namespace, PARTS)
    assert (args.until_step, args.resume_auto, args.resume, args.updates_from(4)) == (9, True, None, 5)
    with pytest.raises(FlagError, match="--until-step 9: the run is already at step 12"):
        args.updates_from(12)


def test_a_hand_made_namespace_is_held_to_the_same_bounds():
    namespace = argparse.Namespace(until_step="4", output="o", keep="0")
    with pytest.raises(FlagError, match="--keep: must be at least 1, not 0"):
        flags.from_namespace(namespace, PARTS)


def test_protocol_args_built_directly_are_held_to_the_same_bounds():
    with pytest.raises(FlagError, match="--pace: must be a finite number, not nan"):
        kit.ProtocolArgs(output=Path("o"), steps=1, pace=float("nan"))


def test_click_options_hand_the_command_one_protocol_args():
    seen = []

    @click.command()
    @flags.click_options(PARTS)
    @click.option("--seed", type=int, default=0)
    def command(protocol: kit.ProtocolArgs, seed: int) -> None:
        seen.append((protocol, seed))

    result = CliRunner().invoke(command, ["--steps", "3", "--output", "o", "--seed", "7"])
    assert result.exit_code == 0, result.output
    assert seen == [(kit.ProtocolArgs(steps=3, output=Path("o"), parts=PARTS), 7)]


# -- declared parts -------------------------------------------------------------------------------------


def test_protocol_args_keep_the_declared_parts_in_their_order():
    args = by_argparse(["--steps=1", "--output=o"])
    assert args.parts == PARTS == by_click(["--steps=1", "--output=o"]).parts


@pytest.mark.parametrize("bad", ["Model", "rng numpy", "model,data", "", "-model"])
def test_a_declared_part_that_is_no_part_name_is_the_programmers_mistake(bad):
    with pytest.raises(ValueError, match=f"part {bad!r}: not a part name"):
        flags.parse(["--steps=1", "--output=o"], parts=(*PARTS, bad))
    with pytest.raises(ValueError, match=f"part {bad!r}"):
        flags.click_options((*PARTS, bad))
    with pytest.raises(ValueError, match=f"part {bad!r}"):
        flags.add_arguments(argparse.ArgumentParser(), (*PARTS, bad))


def test_a_part_declared_twice_is_the_programmers_mistake():
    with pytest.raises(ValueError, match="part 'model': declared twice"):
        flags.parse(["--steps=1", "--output=o"], parts=(*PARTS, "model"))


def test_restored_generators_are_those_whose_rng_part_omit_does_not_name():
    args = by_argparse(["--steps=1", "--output=o", "--resume=c", "--omit=rng-torch,model"])
    assert args.restored_generators(("python", "torch")) == ["python"]
    no_rng = by_argparse(["--steps=1", "--output=o", "--resume=c", "--omit-rng-restore"])
    assert no_rng.restored_generators(["python", "torch"]) == []
    assert by_argparse(["--steps=1", "--output=o"]).restored_generators(["python", "torch"]) == ["python", "torch"]


# -- meta.parts in summary.json -----------------------------------------------------------------------


def test_the_flags_say_what_every_summarys_meta_holds_the_omitted_and_the_declared_parts():
    args = by_argparse(["--steps=1", "--output=o", "--resume=c", "--omit=optimizer,model"])
    assert args.meta() == {protocol.META_OMITTED: ["model", "optimizer"], protocol.META_PARTS: list(PARTS)}
    assert by_click(["--steps=1", "--output=o", "--resume=c", "--omit=optimizer,model"]).meta() == args.meta()


def test_a_withdrawn_part_leaves_meta_parts_and_omitting_it_is_refused_with_the_reason():
    args = by_argparse(["--steps=1", "--output=o"]).withdrawn("data", "this loop has no data position")
    assert args.meta()[protocol.META_PARTS] == ["model", "optimizer", "rng-python", "rng-torch"]
    omitting = by_argparse(["--steps=1", "--output=o", "--resume=c", "--omit=data"])
    with pytest.raises(FlagError, match="--omit=data: this loop has no data position; there is nothing to omit"):
        omitting.withdrawn("data", "this loop has no data position")
