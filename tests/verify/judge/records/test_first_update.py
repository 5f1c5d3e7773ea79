"""The first resumed update against the continuous run's update k+1: the first thing that differs, in the order the
update consumes it, is named with what was the same before it; what cannot tell names nothing."""

import copy
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common.protocol import STANDARD_PARTS
from resumeproof.verify.judge.records import first_update
from resumeproof.verify.judge.records.first_update import own_part, restored

PARTS = ("model", "optimizer", "scheduler", "scaler", "rng-numpy", "rng-torch", "data")
GENERATORS = {o.KIT: {"numpy": "n0", "torch": "t0"}, o.GLOBAL: {"python": "p0", "torch": "t0"}}


def update(**changes: Any) -> dict[str, Any]:
    """One recorded update of a loop that draws the batch from numpy and dropout from torch, with `changes` as
    `moment__key=value`, `generators__moment=(group, name, digest)`."""
    u: dict[str, Any] = {
        o.START: {o.GENERATORS: copy.deepcopy(GENERATORS)},
        o.FORWARD: {o.GENERATORS: _moved(("kit", "numpy", "n1")), o.BATCH: "b", o.MODEL: {"w": "w0", "bn.mean": "m"}},
        o.LOSS: {o.VALUE: 0.5, o.DIGEST: "l", o.SCALE: 4.0},
        o.STEP: {
            o.OPTIMIZER: "adam",
            o.GROUPS: [{"lr": 0.1}],
            o.SCHEDULERS: [{"StepLR": "s"}],
            o.SCALERS: [{"scale": 4.0, "growth_tracker": 1}],
        },
        o.AFTER: {
            o.GENERATORS: _moved(("kit", "numpy", "n1"), ("kit", "torch", "t1"), ("global", "torch", "t1")),
            o.GRADS: "g",
        },
    }
    for where, value in changes.items():
        moment, key = where.split("__")
        if key == o.GENERATORS:
            group, name, digest = value
            u[moment][o.GENERATORS][group][name] = digest
        else:
            u[moment][key] = value
    return u


def _moved(*moves: tuple[str, str, str]) -> dict[str, dict[str, str]]:
    found = copy.deepcopy(GENERATORS)
    for group, name, digest in moves:
        found[group][name] = digest
    return found


def observed(updates: dict[int, dict], restores: list | None = None, rank: int | None = None) -> dict:
    return {rank: o.Observation(rank=rank, updates=read(updates), restores=[o.Restore(**r) for r in restores or ()])}


def read(updates: dict[int, dict]) -> dict[int, o.Recorded]:
    """Updates written as the observer writes them, read as the verifier reads them."""
    return {n: o.Recorded.of(u) for n, u in updates.items()}


def diagnose(first: dict, restores: list | None = None, then: dict | None = None, parts: tuple = PARTS, rows=None):
    before = {o.AFTER: {o.GENERATORS: copy.deepcopy(GENERATORS)}}
    continuous = observed({5: before, 6: then or update()})
    return first_update.diagnose(continuous, observed({1: first}, restores), 5, parts, rows)


def test_the_same_first_update_names_nothing():
    assert diagnose(update()) is None


def test_a_generator_nothing_draws_from_is_no_evidence():
    unused = update(start__generators=("global", "python", "x"), forward__generators=("global", "python", "x"))
    assert diagnose(unused) is None


def test_a_generator_drawn_from_and_not_restored_is_named():
    d = diagnose(update(forward__generators=("kit", "numpy", "other")))
    assert d is not None and d.lost == ("rng-numpy",) and d.rule == first_update.RULE and d.step == 6
    assert "the trainer's numpy generator, drawn before the forward pass, was not restored" in d.explanation


def test_a_generator_restored_right_and_then_drawn_from_is_told_apart():
    restores = [{"group": "global", "generator": "torch", "digest": "t0", "before": 1}]
    first = update(after__generators=("global", "torch", "t9"))
    d = diagnose(first, restores)
    assert d is not None and d.lost == ("rng-torch",)
    assert "was restored to the continuous run's state, then drawn from" in d.explanation
    assert "restore it last" in d.explanation
    wrong = diagnose(first, [{**restores[0], "digest": "t7"}])
    assert wrong is not None and "was set to another state than the continuous run's" in wrong.explanation


def test_a_lost_gradscaler_is_named_with_the_same_batch_and_loss_before_it_where_the_step_is_skipped_too():
    d = diagnose(update(step__scalers=[{"scale": 65536.0, "growth_tracker": 0}]))
    assert d is not None and d.lost == ("scaler",)
    assert d.explanation.startswith("same generators, same batch, same model, same loss, GradScaler")
    assert "scale 65536.0 vs 4.0, growth_tracker 0 vs 1" in d.explanation
    skipped = diagnose(update(loss__scale=65536.0, after__grads="inf"))  # the step skipped: only the loss's scale
    assert (
        skipped is not None and skipped.lost == ("scaler",) and "GradScaler scale 65536.0 vs 4.0" in skipped.explanation
    )
    tracker = diagnose(update(step__scalers=[{"scale": 4.0, "growth_tracker": 3}]))
    assert tracker is not None and tracker.explanation.endswith("GradScaler growth_tracker 3 vs 1")


def test_each_input_names_its_own_part_in_the_order_the_update_consumes_it():
    cases = {
        "data": update(forward__batch="other", step__optimizer="other"),
        "model": update(forward__model={"w": "w0", "bn.mean": "fresh"}, loss__digest="other"),
        "optimizer": update(step__optimizer="other", step__schedulers=[{"StepLR": "other"}]),
        "scheduler": update(step__schedulers=[{"StepLR": "other"}], step__groups=[{"lr": 0.2}]),
    }
    for part, first in cases.items():
        d = diagnose(first)
        assert d is not None and d.lost == (part,), (part, d)


def test_an_lr_that_alone_differs_is_the_schedules_or_the_counters_never_the_optimizers():
    """The optimizer's state and groups come back together: with its state the same, another lr is the schedule (a
    scheduler made or stepped after the load), or with no scheduler the counter the lr is computed from."""
    d = diagnose(update(step__groups=[{"lr": 0.3}]))
    assert d is not None and d.lost == ("scheduler",) and "lr 0.3 vs 0.1" in d.explanation
    none = {"step__schedulers": []}
    d = diagnose(update(step__groups=[{"lr": 0.3}], **none), then=update(**none))
    assert d is not None and d.lost == ("progress",) and "recomputed from a counter that restarted" in d.explanation


def test_an_lr_that_differs_with_an_optimizer_holding_no_state_names_nothing():
    stateless = {"step__schedulers": [], "step__optimizer": {}}  # SGD without momentum: nothing shows it restored
    d = diagnose(update(step__groups=[{"lr": 0.3}], **stateless), then=update(**stateless))
    assert d is not None and d.lost == () and "holds no state" in d.explanation


def test_another_loss_from_the_same_inputs_names_no_part():
    d = diagnose(update(loss__digest="other", loss__value=0.7))
    assert d is not None and d.lost == () and "0.7 vs 0.5" in d.explanation
    assert "state outside the state_dict (a Python attribute, a non-persistent buffer)" in d.explanation


def test_the_trainers_own_name_for_the_part_is_the_one_named():
    d = diagnose(update(step__scalers=[{"scale": 1.0, "growth_tracker": 0}]), parts=("net", "amp"))
    assert d is not None and d.lost == ("amp",)


def test_under_torchrun_a_rank_that_received_another_ranks_batch_is_named():
    then = {r: update(forward__batch=f"b{r}") for r in (0, 1)}
    before = {o.AFTER: {o.GENERATORS: copy.deepcopy(GENERATORS)}}
    continuous = {r: o.Observation(rank=r, updates=read({5: before, 6: then[r]})) for r in (0, 1)}
    resumed = {r: o.Observation(rank=r, updates=read({1: then[0]})) for r in (0, 1)}
    d = first_update.diagnose(continuous, resumed, 5, PARTS)
    assert (
        d is not None
        and d.lost == ("data",)
        and "rank 1: same generators, rank 1 received rank 0's batch" in d.explanation
    )
    assert first_update.diagnose(continuous, {0: resumed[0]}, 5, PARTS) is None  # another number of ranks: no claim


def test_another_batch_names_no_part_where_a_generator_the_observer_cannot_see_may_have_drawn_it():
    d = diagnose(update(forward__batch="other"), parts=(*PARTS, "rng-loader"))
    assert d is not None and d.lost == () and "rng-loader (unseen by the observer)" in d.explanation


def test_a_generator_the_trainer_names_is_evidence_even_where_this_update_does_not_draw_from_it():
    then = update(start__generators=("kit", "loader", "l1"), forward__generators=("kit", "loader", "l1"))
    then[o.AFTER][o.GENERATORS][o.KIT]["loader"] = "l1"
    first = copy.deepcopy(then)
    first[o.FORWARD][o.GENERATORS][o.KIT]["loader"] = "fresh"
    first[o.FORWARD][o.BATCH] = "another"
    d = diagnose(first, then=then, parts=(*PARTS, "rng-loader"))
    assert d is not None and d.lost == ("rng-loader",) and "the trainer's loader generator" in d.explanation


def test_under_torchrun_a_part_lost_on_the_other_ranks_alone_is_the_rank_local_one():
    """Rank 1 resumed another batch, so the gradients every rank shares differ on rank 0 too: the batch, earlier in
    the update, is the first difference, and rank 0 shows it was restored there."""
    before = {o.AFTER: {o.GENERATORS: copy.deepcopy(GENERATORS)}}
    continuous = {
        r: o.Observation(rank=r, updates=read({5: before, 6: update(forward__batch=f"b{r}")})) for r in (0, 1)
    }
    first = {
        0: update(forward__batch="b0", after__grads="shared"),
        1: update(forward__batch="fresh", after__grads="shared"),
    }
    resumed = {r: o.Observation(rank=r, updates=read({1: first[r]})) for r in (0, 1)}
    parts = (*PARTS, "other-ranks.data", "other-ranks.rng")
    d = first_update.diagnose(continuous, resumed, 5, parts)
    assert d is not None and d.lost == ("other-ranks.data",) and d.explanation.startswith("rank 1: same generators")
    assert first_update.diagnose(continuous, resumed, 5, PARTS).lost == ("data",)  # not declared: the part itself


def test_a_generator_restored_right_and_not_drawn_from_as_in_the_continuous_update_names_what_decides_the_draws():
    """An epoch's permutation drawn at update k+1 in the continuous run and not in the resumed one (its position
    said "the next epoch has started"): the generator is right, the data position is not."""
    restores = [{"group": "kit", "generator": "numpy", "digest": "n0", "before": 1}]
    first = update(forward__generators=("kit", "numpy", "n0"), forward__batch="another")
    d = diagnose(first, restores, rows=False)  # the histories: other rows
    assert d is not None and d.lost == ("data",) and "was not drawn from as in the continuous run" in d.explanation
    late = diagnose(first, restores, rows=True)  # the same rows, augmented otherwise: the draws came before the restore
    assert late is not None and late.lost == ("rng-numpy",)
    assert "was restored after the batch drew from it" in late.explanation
    assert diagnose(first, restores).lost == ()  # no history to tell them apart


def test_a_generator_restored_then_drawn_from_while_the_batch_differs_names_the_data_position():
    """A loader without a position restarts its epoch on resume: its new iterator draws from the restored generator
    and yields another batch; restoring the generator later would not help, the position is what was lost."""
    restores = [{"group": "global", "generator": "torch", "digest": "t0", "before": 1}]
    first = update(forward__generators=("global", "torch", "t5"), forward__batch="first of the epoch")
    then = update(forward__generators=("global", "torch", "t1"))
    before = {o.AFTER: {o.GENERATORS: copy.deepcopy(GENERATORS)}}
    continuous = observed({5: before, 6: then})

    def said(rows_same: bool | None):
        return first_update.diagnose(continuous, observed({1: first}, restores), 5, PARTS, rows_same)

    other_rows = said(False)  # the histories say update 6 consumed other rows: the position
    assert other_rows is not None and other_rows.lost == ("data",)
    assert "the process-wide torch generator, drawn before the forward pass, was drawn from between its restore" in (
        other_rows.explanation
    )
    masks = said(True)  # the same rows, masked or augmented otherwise: the generator drawn from before its use
    assert masks is not None and masks.lost == ("rng-torch",) and "then drawn from" in masks.explanation
    assert said(None).lost == ()  # no history to tell: neither is named


def test_every_generator_not_restored_is_named_where_all_of_them_were_lost():
    first = update(forward__generators=("kit", "numpy", "x"))
    first[o.FORWARD][o.GENERATORS][o.KIT]["torch"] = "y"
    d = diagnose(first)
    assert d is not None and d.lost == ("rng-numpy", "rng-torch")
    assert "the trainer's numpy, torch generators, drawn before the forward pass, were not restored" in d.explanation


def test_a_batch_the_continuous_run_took_at_another_update_names_the_data_position_without_histories():
    """`verify --observe` has no history rows: the batch of the continuous run's update 1 again is the evidence
    (an epoch started again), also where an unseen generator could have drawn another batch."""
    continuous = observed({1: update(forward__batch="b-first"), 5: update(), 6: update()})
    found = first_update.diagnose(continuous, observed({1: update(forward__batch="b-first")}), 5, PARTS)
    assert found is not None and found.lost == ("data",) and "batch of update 1" in found.explanation
    assert "replays the run from its start" in found.explanation
    unseen = (*PARTS, "rng-loader")  # a generator the observer cannot see: still the position, by that evidence
    assert first_update.diagnose(continuous, observed({1: update(forward__batch="b-first")}), 5, unseen).lost == (
        "data",
    )
    other = first_update.diagnose(continuous, observed({1: update(forward__batch="b-new")}), 5, unseen)
    assert other is not None and other.lost == ()  # a batch no update took: the position or that generator


# A part the observer recognised by its class (a GradScaler, an averaged model, a generator, an optimizer, an LR
# scheduler) is named in the protocol's words where the trainer declares no part of that kind; a declared part of that
# kind keeps its own name, and two of one kind name neither.
EMA_STATE = [{"Sequential": "e0"}]


def step(**changes):
    found = update()[o.STEP] | {o.AVERAGED: EMA_STATE}
    return found | changes


def test_a_lost_gradscaler_is_named_scaler_where_the_trainer_declares_the_standard_parts_only():
    first = update(step__scalers=[{"scale": 2.0, "growth_tracker": 0}], loss__scale=2.0)
    d = diagnose(first, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("scaler",), d


def test_a_lost_ema_is_named_ema_where_no_part_is_declared_of_its_kind():
    then, first = update(), update()
    then[o.STEP], first[o.STEP] = step(), step(**{o.AVERAGED: [{"Sequential": "e9"}]})
    d = diagnose(first, then=then, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("ema",) and "averaged model" in d.explanation


def test_a_declared_name_of_the_same_kind_wins():
    then, first = update(), update()
    then[o.STEP], first[o.STEP] = step(), step(**{o.AVERAGED: [{"Sequential": "e9"}]})
    d = diagnose(first, then=then, parts=(*STANDARD_PARTS, "teacher"))
    assert d is not None and d.lost == ("teacher",)


def test_two_declared_parts_of_one_kind_name_neither_nor_the_protocols_own():
    assert own_part("ema", ("model", "teacher", "swa")) is None
    assert own_part("scaler", ("model",)) == "scaler"
    assert own_part("rng-cuda", STANDARD_PARTS) == "rng-cuda"


def test_a_concept_the_observer_does_not_recognise_by_its_class_is_not_invented():
    assert own_part("data", ("net", "opt")) is None


def test_the_parts_whose_state_enters_the_first_resumed_update_the_same_are_restored():
    then = update()
    then[o.STEP] = step()
    first = update(loss__digest="other")
    first[o.STEP] = step(**{o.SCALERS: [{"scale": 2.0, "growth_tracker": 0}]})
    continuous, resumed = observed({6: then}), observed({1: first})
    found = restored(continuous, resumed, 5, STANDARD_PARTS)
    assert found == {"model", "optimizer", "scheduler", "ema"}  # the GradScaler's state differs: not restored
    assert restored(continuous, observed({1: first}, rank=0), 5, STANDARD_PARTS) == frozenset()  # other ranks


def test_what_the_observer_could_not_read_is_said_beside_the_diagnosis():
    blind = update(loss__digest="other")
    blind[o.STEP][o.UNSEEN] = ["scaler.growth_tracker"]
    d = diagnose(blind)
    assert d is not None and d.explanation.endswith("; unseen by the observer: scaler.growth_tracker")
    assert "unseen" not in diagnose(update(loss__digest="other")).explanation


def test_another_number_of_backward_passes_names_the_progress_counter_before_the_generators_it_moved():
    first = update(forward__generators=("kit", "numpy", "other"))  # another micro-batch count draws otherwise
    first[o.STEP][o.BACKWARDS], then = 1, update()
    then[o.STEP][o.BACKWARDS] = 3
    d = diagnose(first, then=then, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("progress",) and "1 backward passes in the update vs 3" in d.explanation
    then[o.STEP][o.BACKWARDS] = 1
    assert diagnose(first, then=then, parts=STANDARD_PARTS).lost == ("rng-numpy",)


def _attributes(calls: int, run: str = "r1") -> dict[str, Any]:
    return {"model.gate.calls": calls, "model.run_id": run, "model.width": 8}


def test_a_module_attribute_training_changes_is_named_where_it_lives_with_both_values():
    """A plain attribute (a forward counter gating a warm-up) is in no state_dict: the model's digests agree, and the
    attribute, which the continuous run shows changing from update to update, names the cause."""
    continuous = observed(
        {1: update(forward__attributes=_attributes(0)), 6: update(forward__attributes=_attributes(5))}
    )
    resumed = observed({1: update(forward__attributes=_attributes(0))})
    d = first_update.diagnose(continuous, resumed, 5, PARTS)
    assert d is not None and d.lost == ("model.gate.calls",) and d.rule == first_update.RULE
    assert "same model, model.gate.calls: 5 in the continuous run, 0 after the restore" in d.explanation
    assert "in no state_dict" in d.explanation


def test_an_attribute_that_stays_as_built_is_no_evidence_even_where_each_process_has_its_own():
    """A run id or a width never changes in a run: another value in another process is no state a resume loses."""
    continuous = observed(
        {1: update(forward__attributes=_attributes(5)), 6: update(forward__attributes=_attributes(5))}
    )
    resumed = observed({1: update(forward__attributes=_attributes(5, run="r2"))})
    assert first_update.diagnose(continuous, resumed, 5, PARTS) is None


def _teacher(state: str, optimized: bool = False) -> dict[str, Any]:
    return {"teacher": {o.STATE: {"0.weight": state}, o.OPTIMIZED: optimized}}


def test_another_module_the_update_calls_is_named_by_the_trainers_own_name_or_the_part_it_declares():
    d = diagnose(update(step__modules=_teacher("fresh")), then=update(step__modules=_teacher("ema")))
    assert d is not None and d.lost == ("teacher",)
    assert "teacher: its parameters differ at 0.weight, the optimizer does not hold them" in d.explanation
    declared = diagnose(
        update(step__modules=_teacher("fresh")), then=update(step__modules=_teacher("ema")), parts=(*PARTS, "ema")
    )
    assert declared is not None and declared.lost == ("ema",)  # a teacher is an EMA's other name


def test_a_target_that_differs_behind_the_same_batch_is_the_data():
    d = diagnose(update(loss__target="labels-b"), then=update(loss__target="labels-a"))
    assert d is not None and d.lost == ("data",)
    assert "same generators, same batch, same model, the loss function's target differs" in d.explanation


def test_what_a_trainer_does_not_have_is_never_said_to_be_the_same():
    d = diagnose(update(step__scalers=[{"scale": 8.0, "growth_tracker": 1}]))
    assert d is not None and "target" not in d.explanation and "module attributes" not in d.explanation
    d = diagnose(update(loss__target="t", step__optimizer="other"), then=update(loss__target="t"))
    assert d is not None and d.lost == ("optimizer",) and "same model, same target, same loss" in d.explanation


def _stepped(lr: float) -> dict[str, Any]:
    return update(step__groups=[{"lr": lr}], step__optimizer={"0.exp_avg": "m"})


def test_an_lr_that_differs_only_from_the_second_resumed_update_behind_the_same_schedulers_is_the_progress():
    """The restored param groups carry the right lr into update 6; the schedule's next step computes update 7's from
    a global step that restarted, while the scheduler's own state is the same: the counter it reads is named."""
    continuous = observed({5: update(), 6: _stepped(0.1), 7: _stepped(0.05)})
    resumed = observed({1: _stepped(0.1), 2: _stepped(0.1)})
    d = first_update.diagnose(continuous, resumed, 5, PARTS)
    assert d is not None and d.lost == ("progress",) and d.rule == "second-update" and d.step == 7
    assert "lr 0.1 vs 0.05" in d.explanation and "a counter outside its state" in d.explanation
    assert d.sentence().startswith("lost progress at update 7 (the second resumed one)")


def test_a_second_update_whose_first_difference_is_not_its_lr_names_nothing():
    continuous = observed({5: update(), 6: _stepped(0.1), 7: _stepped(0.05)})
    resumed = observed({1: _stepped(0.1), 2: {**_stepped(0.1), o.FORWARD: {**_stepped(0.1)[o.FORWARD], o.BATCH: "x"}}})
    assert first_update.diagnose(continuous, resumed, 5, PARTS) is None
    other_scheduler = observed(
        {
            1: _stepped(0.1),
            2: update(
                step__groups=[{"lr": 0.1}], step__optimizer={"0.exp_avg": "m"}, step__schedulers=[{"StepLR": "t"}]
            ),
        }
    )
    found = first_update.diagnose(continuous, other_scheduler, 5, PARTS)
    assert found is None  # the scheduler's own state differs: not the counter's evidence


def test_an_attribute_two_runs_of_the_command_hold_otherwise_is_no_evidence():
    """A clock kept on a module changes every update and differs between any two processes: `repeatable` leaves it out
    of every record, where a counter both runs hold alike stays."""

    def run(clock: float, calls: int) -> dict:
        return observed(
            {
                1: update(forward__attributes={"model.clock": clock, "model.calls": 0}),
                6: update(forward__attributes={"model.clock": clock + 5, "model.calls": calls}),
            }
        )

    records = first_update.repeatable(
        {"continuous": run(1.0, 5), "continuous-repeat": run(2.0, 5), "resumed": run(3.0, 0)}
    )
    assert {name for u in records["resumed"][None].updates.values() for name in u.forward.attributes} == {"model.calls"}
    resumed = observed({1: update(forward__attributes={"model.clock": 9.0, "model.calls": 5})})
    assert (
        first_update.diagnose(
            records["continuous"], first_update.without(resumed, frozenset({"model.clock"})), 5, PARTS
        )
        is None
    )


def test_another_number_of_backward_passes_fed_another_batch_names_the_data_position():
    """A script that counts its micro-steps from the batch index moves both when its data position is lost (a skip
    of one micro-batch per update instead of three): the batch is the evidence, not the count it moved."""
    first = update(forward__batch="other")
    first[o.STEP][o.BACKWARDS], then = 2, update()
    then[o.STEP][o.BACKWARDS] = 3
    d = diagnose(first, then=then, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("data",) and "backward passes" not in d.explanation


def test_a_recognised_part_is_named_in_the_protocols_words_only_where_every_declared_part_has_a_known_kind():
    """A trainer that declares `warmup` and `cosine` may hold the scheduler the records saw under either name:
    `scheduler` would name a part it does not have, and which of its own the evidence cannot tell."""
    assert own_part("scheduler", ("net", "opt", "warmup", "cosine", "rng-torch")) is None
    assert own_part("scheduler", ("net", "opt", "order", "rng-torch")) == "scheduler"  # every kind known: none of it
    assert own_part("scaler", ("model", "optimizer", "other-ranks.data", "other-ranks.rng")) == "scaler"
    assert own_part("scheduler", ("net", "opt", "sched", "warmup")) == "sched"  # its own name still wins
