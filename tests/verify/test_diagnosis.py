"""The diagnosis names the likely lost state; the epochs of a history are read off its row ids."""

import copy

import pytest

from resumeproof.verify import points
from resumeproof.verify.diagnosis import RULES, diagnose, identical
from tests.helpers import TRAINERS, read_verification, run_verify

# -- the rules, on summaries built by hand --------------------------------------------------------


def summary() -> dict:
    history = [
        {"step": s, "rows": [2 * s, 2 * s + 1], "lr": 0.1 if s < 4 else 0.05, "loss": 1.0 / s} for s in range(1, 7)
    ]
    state = {"model": [0.5, -0.25], "optimizer": {"state": {"0": {"step": 6.0}}}, "scheduler": {"last_epoch": 6}}
    return {"step": 6, "history": history, "state": state, "next": {"lr": 0.05, "rng": {"numpy": 0.3, "torch": 0.7}},
            "eval": {"mse": 0.1}}  # fmt: skip


def changed(edit) -> dict:
    other = copy.deepcopy(summary())
    edit(other)
    return other


def lost(other: dict, resumed_at: int = 3, boundaries: tuple[int, ...] = ()) -> tuple[str, str]:
    found = diagnose(summary(), other, 1e-12, resumed_at, boundaries)
    assert found is not None
    return found.lost, found.rule


def test_identical_runs_have_no_diagnosis():
    assert diagnose(summary(), summary(), 1e-12, 3) is None


def test_a_shorter_history_is_lost_progress():
    assert lost(changed(lambda s: (s.update(step=3), s.__setitem__("history", s["history"][:3])))) == (
        "progress",
        "progress",
    )


def test_other_rows_are_a_lost_data_position_and_at_an_epoch_start_a_sampler_off_by_one_draw():
    def other_rows(s):
        s["history"][3]["rows"] = [0, 1]
        s["history"][3]["loss"] = 9.0

    assert lost(changed(other_rows)) == ("data", "rows")
    assert lost(changed(other_rows), boundaries=(3,)) == ("data", "rows-at-epoch-start")


def test_another_lr_is_the_scheduler_and_a_reset_step_counter_the_optimizer():
    def other_lr(s):
        s["history"][4]["lr"], s["history"][4]["loss"], s["state"]["scheduler"]["last_epoch"] = 0.1, 2.0, 3

    assert lost(changed(other_lr)) == ("scheduler", "counters")

    def reset_optimizer(s):
        s["history"][3]["lr"], s["history"][3]["loss"], s["state"]["optimizer"]["state"]["0"]["step"] = 0.1, 2.0, 3.0

    assert lost(changed(reset_optimizer)) == ("optimizer", "counters")


def test_a_generator_whose_next_draw_differs_is_named():
    def numpy_moved(s):
        s["history"][3]["loss"], s["next"]["rng"]["numpy"] = 2.0, 0.9

    assert lost(changed(numpy_moved)) == ("rng-numpy", "next-draws")


def test_another_loss_on_the_same_batch_is_the_model_at_the_first_update_and_the_moments_later():
    def first(s):
        s["history"][3]["loss"], s["state"]["model"][0] = 2.0, 0.4

    def later(s):
        s["history"][4]["loss"], s["state"]["model"][0] = 2.0, 0.4

    assert lost(changed(first)) == ("model", "weights")
    assert lost(changed(later)) == ("optimizer", "weights")


def test_every_rule_is_in_the_documented_table():
    table = (TRAINERS.parent.parent / "docs" / "checks.md").read_text()
    for name, _, _ in RULES:
        assert f"`{name}`" in table, name
    assert "`rows-at-epoch-start`" in table and "`identical-to-full-resume`" in table


def test_identical_means_bit_identical():
    assert identical(summary(), summary(), ("history", "state"))
    assert not identical(summary(), changed(lambda s: s["state"]["model"].__setitem__(0, 0.5 + 1e-16)), ("state",))


# -- epochs read off a history ---------------------------------------------------------------------


def history(rows_per_update: list[list[int]]) -> list[dict]:
    return [{"step": i + 1, "rows": rows} for i, rows in enumerate(rows_per_update)]


def test_epochs_are_where_every_row_has_been_seen_once():
    perm = [[0, 5], [3, 1], [4, 2], [2, 0], [1, 5]]  # 6 rows, batch 2: an epoch is 3 updates
    epochs = points.infer(history(perm))
    assert (epochs.rows, epochs.boundaries) == (6, (3,))
    assert epochs.points(5) == (1, 3, 4)  # the boundary, and the middle of each epoch


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ([[0, 1], [2, 3]], "no epoch is seen to complete"),  # the history may be shorter than an epoch
        ([[0, 1], [1, 2], [0, 2]], "consumed twice"),  # not a shuffle without replacement
        ([[], []], "consumed no rows"),
    ],
)
def test_epochs_that_cannot_be_told_are_refused_with_the_reason(rows, why):
    with pytest.raises(points.EpochError, match=why):
        points.infer(history(rows))


# -- end to end: a boundary bug, a resume that restores no random state -----------------------------


def verify(tmp_path, script: str, *args: str):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", f"python -B {TRAINERS / script}", *args)
    report = tmp_path / "v" / "verification.json"
    return proc, read_verification(report) if report.is_file() else {}


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
    assert failed["resumed-6"]["diagnosis"]["rule"] == "rows-at-epoch-start"
    assert failed["resumed-6"]["diagnosis"]["lost"] == "data" and failed["resumed-6"]["diagnosis"]["step"] == 7


def test_a_resume_that_restores_no_random_state_is_diagnosed_as_such(tmp_path):
    proc, doc = verify(tmp_path, "forgets_rng.py", "--steps", "6", "--interrupt-at", "3")
    assert proc.returncode == 1, proc.stderr
    negative = doc["comparison"]["no_rng_resume"]
    assert negative["identical_to_full_resume"] is True and negative["diagnosis"]["rule"] == "identical-to-full-resume"
    assert doc["comparison"]["full_resume"]["diagnosis"]["lost"].startswith("rng-")
