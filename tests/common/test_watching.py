"""common/watching.py: a restart's restore judged part by part against the record of what was saved, and the
resumes.jsonl lines read back (a torn one counted, never a mismatch)."""

import json

import pytest

from resumeproof.common import protocol, watching
from resumeproof.common.watching import Difference, Restart

SAVED = {
    watching.MODEL: {"0.weight": "a" * 32, "0.bias": "b" * 32},
    watching.ATTRIBUTES: {"Net.calls": 7},
    watching.OPTIMIZER: {"0.exp_avg": "c" * 32, "0.step": "d" * 32},
    watching.GROUPS: [{"lr": 0.01, "weight_decay": 0.0}],
    watching.SCHEDULERS: [{"StepLR": "e" * 32}],
    watching.SCALERS: [],
    watching.AVERAGED: [],
    watching.GENERATORS: {"global": {"torch": "f" * 32}, "kit": {"data": "9" * 32}},
}
RESTORES = [
    {"group": "global", "generator": "torch", "digest": "f" * 32},
    {"group": "kit", "generator": "data", "digest": "9" * 32},
]
# The first update of a resume that restored everything: its generators drawn from since (the batch), so they hold
# another state at the forward pass than at the save; the restores set them to the saved one.
NOW = {**SAVED, watching.GENERATORS: {"global": {"torch": "1" * 32}, "kit": {"data": "2" * 32}}}


def test_a_restart_that_restored_every_part_differs_in_none_though_its_generators_were_drawn_from_since():
    assert watching.compare(SAVED, NOW, RESTORES) == []


@pytest.mark.parametrize(
    ("key", "now", "part", "said"),
    [
        (watching.MODEL, {"0.weight": "a" * 32, "0.bias": "0" * 32}, "model", "1 of 2 differ: 0.bias"),
        (watching.OPTIMIZER, {}, "optimizer", "nothing of it is held now"),
        (watching.GROUPS, [{"lr": 0.02, "weight_decay": 0.0}], "hyper-parameters", "lr (saved 0.01, now 0.02)"),
        (watching.SCHEDULERS, [{"StepLR": "0" * 32}], "scheduler", "1 of 1 differ: StepLR"),
        (watching.ATTRIBUTES, {"Net.calls": 0}, "attributes", "Net.calls (saved 7, now 0)"),
        (watching.MODEL, {"0.weight": "a" * 32}, "model", "1 missing: 0.bias"),
    ],
)
def test_each_part_that_differs_is_named_with_how_and_no_other(key, now, part, said):
    found = watching.compare(SAVED, {**NOW, key: now}, RESTORES)
    assert [d.part for d in found] == [part] and said in found[0].how


def test_a_generator_not_restored_is_named_and_one_seeded_again_told_apart():
    never = watching.compare(SAVED, NOW, RESTORES[1:])
    assert never == [Difference("rng-torch", "never set: it was not restored")]
    seeded = [{"group": "global", "generator": "torch", "digest": "3" * 32}, RESTORES[1]]
    assert watching.compare(SAVED, NOW, seeded)[0].how.startswith("set to another state")
    kit = watching.compare(SAVED, NOW, RESTORES[:1])  # a trainer's own generator is named by its own name
    assert [d.part for d in kit] == ["data"]


def test_a_generator_left_as_it_was_saved_without_a_restore_is_no_difference():
    """A generator the run set and never drew from again holds the saved state wherever it was built the same."""
    same = {**NOW, watching.GENERATORS: SAVED[watching.GENERATORS]}
    assert watching.compare(SAVED, same, []) == []


def test_a_part_the_save_did_not_record_is_not_judged():
    saved = {watching.MODEL: SAVED[watching.MODEL]}  # saved before any optimizer step: no optimizer recorded
    assert watching.compare(saved, {watching.MODEL: SAVED[watching.MODEL], watching.OPTIMIZER: {}}, []) == []


def test_a_first_update_fed_another_batch_names_the_data_only_where_the_generators_were_restored():
    """The batch the update after the save was fed, against the restart's first: its position in the data lost where
    every generator was restored; where one was not, the batch may have been drawn from it, and only it is named."""
    saved = {**SAVED, watching.NEXT_BATCH: "7" * 32}
    assert watching.compare(saved, {**NOW, watching.NEXT_BATCH: "7" * 32}, RESTORES) == []
    fed = {**NOW, watching.NEXT_BATCH: "8" * 32}
    assert watching.compare(saved, fed, RESTORES) == [Difference(watching.DATA, watching.FED_OTHERWISE)]
    (drawn,) = watching.compare(saved, fed, RESTORES[1:])
    assert drawn.part == "rng-torch" and drawn.how.endswith(f"{watching.FED_OTHERWISE}, which it may explain")
    assert watching.compare(SAVED, fed, RESTORES) == []  # a save no update followed: no batch to hold it to


def test_the_part_names_are_the_protocols():
    assert watching.DATA == protocol.DATA
    assert watching.PARTS[watching.MODEL] == protocol.MODEL
    assert watching.PARTS[watching.OPTIMIZER] == protocol.OPTIMIZER
    assert watching.PARTS[watching.SCHEDULERS] == protocol.SCHEDULER
    assert watching.PARTS[watching.SCALERS] == protocol.SCALER
    assert watching.PARTS[watching.AVERAGED] == protocol.EMA
    assert protocol.rng_part("torch") == watching.RNG_PREFIX + "torch"


def restart(status: str, **more) -> Restart:
    return Restart(time="t", status=status, checkpoint="/r/ckpt.pt", digest="0" * 32, saved_update=4, **more)


def test_resumes_jsonl_reads_back_every_whole_line_and_counts_a_torn_one(tmp_path):
    exact = restart(watching.EXACT)
    differs = restart(watching.DIFFERS, differences=[{"part": "optimizer", "how": "x"}], stopped=True)
    for line in (exact, differs):
        watching.append_line(tmp_path / watching.RESUMES, line.to_json())
    with (tmp_path / watching.RESUMES).open("a") as f:
        f.write(json.dumps(exact.to_json())[:30])  # a process killed mid-write
    assert watching.read_restarts(tmp_path) == ([exact, differs], 1)
    assert "NOT restored exactly" in differs.line() and "optimizer: x" in differs.line()
    assert differs.line().endswith("stopped before its first update")
    assert exact.line() == "resumeproof watch: restored exactly from /r/ckpt.pt (saved after update 4)"


def test_a_record_is_found_by_the_rank_that_saved_it_when_this_rank_saved_none(tmp_path):
    for rank in (None, 0):
        path = watching.save_record(tmp_path, "ab" * 16, rank)
        watching.write_atomically(path, "{}")
        assert watching.find_record(tmp_path, "ab" * 16, 3) == path
        path.unlink()
    assert watching.find_record(tmp_path, "ab" * 16, 3) is None
    assert list((tmp_path / watching.SAVES).iterdir()) == []  # no temporary left behind
