"""The diagnosis names the likely lost state, from the summaries alone and, end to end, from a verification."""

import copy

import pytest

from resumeproof.common.protocol import STANDARD_PARTS
from resumeproof.verify.judge.summaries import diagnosis
from resumeproof.verify.judge.summaries.diagnosis import RULES, Context
from resumeproof.verify.run.summary import Summary
from tests.helpers import TRAINERS, read_verification, run_verify

# -- the rules, on summaries built by hand --------------------------------------------------------


def diagnose(reference: dict, other: dict, c: Context):
    """The diagnosis of two summary documents (as trainers write them), read as read_summary reads them."""
    return diagnosis.diagnose(Summary.of(reference), Summary.of(other), c)


def identical(a: dict, b: dict) -> bool:
    return diagnosis.identical(Summary.of(a), Summary.of(b))


def summary() -> dict:
    history = [
        {"step": s, "rows": [2 * s, 2 * s + 1], "lr": 0.1 if s < 4 else 0.05, "loss": 1.0 / s} for s in range(1, 7)
    ]
    state = {"model": [0.5, -0.25], "optimizer": {"state": {"0": {"step": 6.0}}}, "scheduler": {"last_epoch": 6}}
    return {
        "step": 6,
        "history": history,
        "state": state,
        "next": {"lr": 0.05, "rng": {"numpy": 0.3, "torch": 0.7}},
        "eval": {"mse": 0.1},
    }


def changed(edit, base=None) -> dict:
    other = copy.deepcopy(base or summary())
    edit(other)
    return other


def lost(other: dict, resumed_at: int = 3, starts: tuple[int, ...] = (), parts=STANDARD_PARTS, base=None):
    c = Context(resumed_at=resumed_at, parts=tuple(parts), epoch_starts=frozenset(starts))
    found = diagnose(base or summary(), other, c)
    assert found is not None
    return found.lost, found.rule


def test_identical_runs_have_no_diagnosis():
    assert diagnose(summary(), summary(), Context(resumed_at=3, parts=STANDARD_PARTS)) is None


def test_a_shorter_history_is_lost_progress():
    shorter = changed(lambda s: (s.update(step=3), s.__setitem__("history", s["history"][:3])))
    assert lost(shorter) == (("progress",), "progress")


def other_rows(s):
    s["history"][3]["rows"] = [0, 1]
    s["history"][3]["loss"] = 9.0


def test_other_rows_are_a_lost_data_position_and_at_an_epoch_start_a_sampler_off_by_one_draw():
    assert lost(changed(other_rows)) == (("data",), "rows")
    assert lost(changed(other_rows), starts=(4,)) == (("data",), "rows-at-epoch-start")


def test_at_an_epoch_start_rows_and_a_generator_that_draws_otherwise_are_not_told_apart():
    def both(s):
        other_rows(s)
        s["next"]["rng"]["numpy"] = 0.9

    assert lost(changed(both), starts=(4,)) == ((), "rows-at-epoch-start")


def test_a_restarted_scheduler_counter_names_the_scheduler_and_a_restarted_step_counter_the_optimizer():
    def scheduler_restarted(s):
        s["history"][3]["lr"], s["history"][3]["loss"], s["state"]["scheduler"]["last_epoch"] = 0.1, 2.0, 3

    assert lost(changed(scheduler_restarted)) == (("scheduler",), "restarted-counter")

    def optimizer_recreated(s):  # its lr back to the initial value: the lr differs too, the scheduler did not restart
        s["history"][3]["lr"], s["history"][3]["loss"], s["state"]["optimizer"]["state"]["0"]["step"] = 0.1, 2.0, 3.0

    assert lost(changed(optimizer_recreated)) == (("optimizer",), "restarted-counter")


def test_an_lr_that_differs_with_no_counter_to_tell_the_scheduler_from_the_optimizer_is_unknown():
    assert lost(changed(lambda s: s["history"][3].update(lr=0.2, loss=3.0))) == ((), "none")


@pytest.mark.parametrize("where", [("rng",), ("draws",), ()], ids=["next.rng", "next.draws", "next"])
def test_a_generator_whose_next_draw_differs_is_named_under_any_key_of_next(where):
    def numpy_moved(s):
        s["history"][3]["loss"] = 2.0
        s["next"] = {"lr": 0.05, **({where[0]: {"numpy": 0.9, "torch": 0.7}} if where else {"numpy": 0.9})}

    base = changed(
        lambda s: s.update(next={"lr": 0.05, **({where[0]: {"numpy": 0.3, "torch": 0.7}} if where else {"numpy": 0.3})})
    )
    assert lost(changed(numpy_moved, base), base=base) == (("rng-numpy",), "next-draws")


def test_a_history_field_beyond_rows_lr_and_loss_names_its_part():
    parts = (*STANDARD_PARTS, "scaler")
    base = changed(lambda s: [r.update(scale=65536.0) for r in s["history"]])
    scaler_lost = changed(lambda s: s["history"][4].update(scale=32768.0), base)
    assert lost(scaler_lost, parts=parts, base=base) == (("scaler",), "history-field")


def test_a_part_whose_reported_state_equals_the_continuous_runs_is_never_named():
    parts = (*STANDARD_PARTS, "scaler")
    base = changed(
        lambda s: ([r.update(scale=65536.0) for r in s["history"]], s["state"].update(scaler={"scale": 1.0}))
    )
    other = changed(lambda s: s["history"][4].update(scale=32768.0), base)  # its state.scaler is the same
    assert lost(other, parts=parts, base=base) == ((), "none")


def test_other_rows_with_the_data_position_restored_name_nothing_and_say_the_rows_differ():
    """A sampler whose epoch was not set again: its saved position is the continuous run's, its batches are not."""
    base = changed(lambda s: s["state"].update(data={"cursor": 6}))
    found = diagnose(base, changed(other_rows, base), Context(resumed_at=3, parts=STANDARD_PARTS))
    assert found is not None and (found.lost, found.rule) == ((), "none")
    assert found.explanation.startswith("another batch was drawn, yet the data position's state equals")


def test_state_alone_that_differs_names_its_part_when_the_history_is_the_same():
    parts = (*STANDARD_PARTS, "ema")
    base = changed(lambda s: s["state"].update(ema=[0.4, -0.2]))
    assert lost(changed(lambda s: s["state"].update(ema=[0.0, 0.0]), base), parts=parts, base=base) == (
        ("ema",),
        "state-only",
    )


def test_an_ema_teacher_whose_counter_restarted_is_named_although_the_loss_differs_too():
    parts = (*STANDARD_PARTS, "ema")
    base = changed(lambda s: s["state"].update(teacher={"n_averaged": 6, "w": [0.1]}))

    def teacher_lost(s):
        s["history"][3]["loss"], s["state"]["model"][0] = 2.0, 0.4
        s["state"]["teacher"] = {"n_averaged": 3, "w": [0.0]}

    assert lost(changed(teacher_lost, base), parts=parts, base=base) == (("ema",), "restarted-counter")


def test_another_loss_on_the_same_batch_names_no_part_it_could_be_the_model_or_an_unreported_generator():
    def first(s):
        s["history"][3]["loss"], s["state"]["model"][0] = 2.0, 0.4

    found = diagnose(summary(), changed(first), Context(resumed_at=3, parts=STANDARD_PARTS))
    assert found is not None and found.lost == () and "a generator the summary does not report" in found.explanation


def test_every_rule_is_in_the_documented_table():
    table = (TRAINERS.parent.parent / "docs" / "checks.md").read_text()
    for name, _ in RULES:
        assert f"`{name}`" in table, name
    for rule in ("rows-at-epoch-start", "identical-to-full-resume", "reproduced", "not-deterministic", "no-power"):
        assert f"`{rule}`" in table, rule


def test_identical_means_bit_identical():
    assert identical(summary(), summary())
    assert not identical(summary(), changed(lambda s: s["state"]["model"].__setitem__(0, 0.5 + 1e-16)))


# -- end to end: a boundary bug, a resume that restores no random state -----------------------------


def verify(tmp_path, script: str, *args: str):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", f"python -B {TRAINERS / script}", *args)
    report = tmp_path / "v" / "verification.json"
    return proc, read_verification(report) if report.is_file() else {}


@pytest.mark.slow  # three whole verifications
def test_a_sampler_one_draw_behind_at_the_epoch_boundary_fails_under_epochs_and_passes_mid_epoch(tmp_path):
    mid = verify(tmp_path / "mid", "epoch_boundary_bug.py")
    assert mid[0].returncode == 0, mid[0].stderr
    assert mid[1]["coverage"]["untried_boundaries"] == [6]
    assert "not tried: the epoch boundary at k = 6" in mid[0].stderr
    proc, doc = verify(tmp_path / "epochs", "epoch_boundary_bug.py", "--interrupt-at", "epochs")
    assert proc.returncode == 1, proc.stderr
    assert doc["interrupt_at"] == [3, 6, 8] and doc["coverage"]["untried_boundaries"] == []
    failed = {name: entry for name, entry in doc["comparison"]["resumes"].items() if entry["verdict"] != "concordant"}
    assert list(failed) == ["resumed-6"]
    found = failed["resumed-6"]["diagnosis"]
    # The files alone cannot tell a data position from a shuffler one draw off (rule rows-at-epoch-start, unknown);
    # the observer's records can (its repeat recorded update 7: the points were known only after the continuous run):
    # the shuffler was restored right, and the resumed position did not draw the new epoch's permutation.
    assert (found["rule"], found["step"], found["parts"]) == ("first-update", 7, ["data"])
    assert "the trainer's shuffle generator, drawn before the forward pass, was not drawn from" in found["explanation"]
    plain = verify(tmp_path / "plain", "epoch_boundary_bug.py", "--interrupt-at", "epochs", "--no-observe")[1]
    said = plain["comparison"]["resumes"]["resumed-6"]["diagnosis"]
    assert said["rule"] == "rows-at-epoch-start" and said["parts"] == [] and "or the shuffler" in said["explanation"]


def test_a_resume_that_restores_no_random_state_is_diagnosed_as_such(tmp_path):
    proc, doc = verify(tmp_path, "forgets_rng.py", "--steps", "6", "--interrupt-at", "3")
    assert proc.returncode == 1, proc.stderr
    negative = doc["comparison"]["no_rng_resume"]
    assert negative["identical_to_full_resume"] is True and negative["diagnosis"]["rule"] == "identical-to-full-resume"
    assert negative["diagnosis"]["parts"] == []  # which of the two it is, the summaries cannot tell
    parts = doc["comparison"]["full_resume"]["diagnosis"]["parts"]
    assert parts and all(part.startswith("rng-") for part in parts)
