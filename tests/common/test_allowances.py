"""Files accepted by name although their kind is refused (common/allowances.py): a glob allows its own kind only."""

from resumeproof.common.allowances import NONE_ALLOWED, Allowances


def test_a_file_is_allowed_by_the_first_glob_of_its_kind_and_by_no_other_kind():
    allow = Allowances(unsafe_pickle=("rng*.pkl", "*.pkl"), opaque=("blob.bin",))
    assert allow.pattern_for("pickle", "rng_0.pkl") == "rng*.pkl"
    assert allow.pattern_for("pickle", "other.pkl") == "*.pkl"
    assert allow.pattern_for("opaque", "blob.bin") == "blob.bin"
    assert allow.pattern_for("opaque", "rng_0.pkl") is None  # a pickle's glob allows no opaque file
    assert allow.pattern_for("torch", "blob.bin") is None  # nor a file of another kind
    assert allow.pattern_for("pickle", "RNG.PKL") is None  # case matters
    assert NONE_ALLOWED.pattern_for("pickle", "rng_0.pkl") is None
