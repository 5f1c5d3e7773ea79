"""The environment verification.json records: the verifier's own, and each trajectory's GPU where they differ."""

from resumeproof.verify.environment import gpus_differ

H200, A100 = {"name": "NVIDIA H200", "driver": "580.65"}, {"name": "NVIDIA A100", "driver": "570.1"}


def test_trajectories_on_different_gpus_are_recorded_each_with_its_own():
    same = {"continuous": {"meta": {"gpu": H200}}, "resumed": {"meta": {"gpu": dict(H200)}}}
    assert gpus_differ(same) is None and gpus_differ({"continuous": {"meta": None}, "resumed": {}}) is None
    other = {"continuous": {"meta": {"gpu": H200}}, "resumed": {"meta": {"gpu": A100}}}
    assert gpus_differ(other) == {"continuous": H200, "resumed": A100}
