"""`verify --observe`'s judgement of the observer's records, on records built by hand: every update after k bit for
bit, the run's length, the restore against the interrupted process's inputs (generators only where drawn), and a
negative control that cannot diverge saying why instead of passing as if it had."""

import math
from array import array

from resumeproof.common import observation as o
from resumeproof.verify.judge.records import exact as judge


def update(loss: str = "l", params: str = "p", torch_state: str = "t", python_state: str = "py") -> dict:
    generators = {o.GLOBAL: {"torch": torch_state, "python": python_state}}
    return {
        o.START: {o.GENERATORS: generators},
        o.FORWARD: {o.GENERATORS: generators, o.BATCH: "b", o.MODEL: {"w": params}},
        o.LOSS: {o.VALUE: 1.0, o.DIGEST: loss},
        o.STEP: {o.OPTIMIZER: "adam", o.GROUPS: [{"lr": 0.1}], o.SCHEDULERS: [], o.SCALERS: []},
        o.AFTER: {
            o.GENERATORS: {o.GLOBAL: {"torch": torch_state + "'", "python": python_state}},
            o.PARAMS: {"w": params},
        },
    }


def seen(updates: dict[int, dict], completed: int | None = None, blocked: tuple[str, ...] = ()) -> dict:
    done = max(updates, default=0) if completed is None else completed
    return {None: o.Observation(rank=None, updates=read(updates), completed=done, blocked=blocked)}


def read(updates: dict) -> dict[int, o.Recorded]:
    """Updates written as the observer writes them (or read already), read as the verifier reads them."""
    return {n: u if isinstance(u, o.Recorded) else o.Recorded.of(u) for n, u in updates.items()}


CONTINUOUS = seen({n: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(1, 7)})


def test_a_resume_equal_at_every_update_after_k_passes_and_one_that_ran_too_long_fails_naming_it():
    same = seen({n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)})
    entry, check = judge.resume(CONTINUOUS, same, 3, "resumed")
    assert check.passed and entry.verdict == "concordant" and entry.max_state_deviation == 0.0
    longer = seen({n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)}, completed=6)
    entry, check = judge.resume(CONTINUOUS, longer, 3, "resumed")
    assert not check.passed and check.first_mismatch == "updates: ran 6 where 3 were left"
    assert entry.max_state_deviation is None  # digests: how far, nobody knows


def test_a_resume_of_the_right_updates_but_not_as_many_lost_its_count_of_updates_done():
    """Rule update-count: every update it made is the continuous run's, only their number differs: its step counter
    came back behind (it runs longer) or ahead (it stops early) of its weights."""
    updates = {n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)}
    _, behind = judge.resume(CONTINUOUS, seen(updates, completed=4), 3, "preempted")
    assert behind.diagnosis is not None and behind.diagnosis.lost == ("progress",)
    assert behind.diagnosis.rule == "update-count" and behind.diagnosis.head == "lost progress"
    assert "it made 4 where 3 were left after update 3: its count of updates done came back 1 behind its state" in (
        behind.diagnosis.explanation
    )
    two = {n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 6)}
    _, ahead = judge.resume(CONTINUOUS, seen(two, completed=2), 3, "preempted")
    assert ahead.diagnosis is not None and ahead.diagnosis.lost == ("progress",)
    assert "came back 1 ahead of its state" in ahead.diagnosis.explanation
    other = {**updates, 2: update(loss="another", params="p5", torch_state="t5")}  # an update differs too
    _, differs = judge.resume(CONTINUOUS, seen(other, completed=4), 3, "preempted")
    assert differs.diagnosis is None or differs.diagnosis.rule != "update-count"


def test_the_restore_ignores_a_generator_nothing_draws_and_catches_one_that_is_drawn():
    interrupted = seen({3: update(torch_state="t3"), 4: update(torch_state="t4")}, completed=3)
    unused_differs = seen({1: update(torch_state="t4", python_state="another process's")})
    assert judge.restore(interrupted, unused_differs, 3, "resumed").passed
    drawn_differs = seen({1: update(torch_state="reseeded")})
    check = judge.restore(interrupted, drawn_differs, 3, "resumed")
    assert not check.passed and check.first_mismatch == "generators"


def test_a_negative_control_that_cannot_diverge_says_why_and_claims_no_divergence():
    full = seen({n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)})
    nothing_blocked = seen(dict(full[None].updates))
    entry, check = judge.negative(CONTINUOUS, nothing_blocked, full, 3)
    assert check.passed and "not applicable" in check.name and entry.verdict == "not-applicable"
    blocked = seen(dict(full[None].updates), blocked=("torch.set_rng_state",))
    assert "without power" in judge.negative(CONTINUOUS, blocked, full, 3)[1].name


def valued(tmp_path, name: str, params: dict[int, list[float]], loss: float = 1.0) -> dict:
    """A run whose records name the parameters by a digest of their values, with the values kept beside them (the
    observer's VALUES_ENV), and `loss` added to every update's loss value."""
    source = o.record_file(tmp_path / name, None)
    updates = {}
    for n, values in params.items():
        updates[n] = update(loss=repr(values), params=repr(values))
        updates[n][o.LOSS][o.VALUE] = loss
        kept = o.values_file(source, n, o.AFTER, o.PARAMS)
        kept.parent.mkdir(exist_ok=True)
        kept.write_bytes(array("d", values).tobytes())
        o.values_file(source, n, o.STEP, o.OPTIMIZER).write_bytes(b"")
    return {None: o.Observation(rank=None, updates=read(updates), completed=max(params), source=source)}


def test_within_a_tolerance_the_kept_values_decide_and_a_gap_is_measured_not_assumed(tmp_path):
    continuous = valued(tmp_path, "continuous", {n: [0.5 * n, 1.0] for n in range(1, 5)})
    close = valued(tmp_path, "resumed", {n - 2: [0.5 * n + 3e-10, 1.0] for n in range(3, 5)}, loss=1.0 + 2e-10)
    entry, check = judge.resume(continuous, close, 2, "resumed", atol=1e-9)
    assert check.passed and "within atol 1e-09" in check.name
    assert 2e-10 < entry.max_state_deviation <= 4e-10 and 1e-10 < entry.max_deviation <= 3e-10
    entry, check = judge.resume(continuous, close, 2, "resumed")  # bit for bit: the digests differ
    assert not check.passed and check.first_mismatch == "update 3: loss" and entry.max_state_deviation is None
    far = valued(tmp_path, "far", {n - 2: [0.5 * n + 1e-6, 1.0] for n in range(3, 5)})
    entry, check = judge.resume(continuous, far, 2, "resumed", atol=1e-9)
    assert not check.passed and check.first_mismatch == "update 3: parameters" and entry.max_state_deviation > 9e-7


def test_within_a_tolerance_a_nan_or_values_never_kept_still_differ(tmp_path):
    continuous = valued(tmp_path, "continuous", {n: [0.5 * n, 1.0] for n in range(1, 4)})
    nan = valued(tmp_path, "nan", {1: [1.5, math.nan]})
    assert judge.resume(continuous, nan, 2, "resumed", atol=1.0)[1].first_mismatch == "update 3: parameters"
    unkept = valued(tmp_path, "unkept", {1: [1.5 + 1e-12, 1.0]})
    o.values_file(unkept[None].source, 1, o.AFTER, o.PARAMS).unlink()
    entry, check = judge.resume(continuous, unkept, 2, "resumed", atol=1.0)
    assert not check.passed and entry.max_state_deviation is None
