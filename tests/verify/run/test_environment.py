"""The environment verification.json records: the verifier's own, and each trajectory's GPU where they differ."""

from resumeproof.verify.run.environment import gpus_differ
from resumeproof.verify.run.summary import Summary

H200, A100 = {"name": "NVIDIA H200", "driver": "580.65"}, {"name": "NVIDIA A100", "driver": "570.1"}


def on(gpu: dict | None) -> Summary:
    return Summary.of({"meta": {"gpu": gpu} if gpu is not None else {}})


def test_trajectories_on_different_gpus_are_recorded_each_with_its_own():
    same = {"continuous": on(H200), "resumed": on(dict(H200))}
    assert (
        gpus_differ(same) is None
        and gpus_differ({"continuous": Summary.of({"meta": None}), "resumed": on(None)}) is None
    )
    other = {"continuous": on(H200), "resumed": on(A100)}
    assert gpus_differ(other) == {"continuous": H200, "resumed": A100}
