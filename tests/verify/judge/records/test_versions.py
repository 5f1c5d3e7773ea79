"""How a resume's environment differs from the run's (records/versions.py): what is a difference, and what is not."""

from resumeproof.common.observation import Environment, Observation
from resumeproof.common.protocol import CONTINUOUS, RESUMED
from resumeproof.verify.judge.records.versions import across, differences

RUN = Environment(
    executable="/venv/bin/python",
    python="3.11.7",
    torch="2.13.0+cpu",
    script="/a/train.py",
    code={"train.py": "1" * 64, "model.py": "2" * 64, "resume.py": "3" * 64},
)


def another(**changed) -> Environment:
    return Environment(**{**vars(RUN), **changed})


def test_the_same_environment_differs_in_nothing_even_where_the_resume_loaded_other_files():
    resumed = another(code={"train.py": "1" * 64, "model.py": "2" * 64, "data.py": "4" * 64})
    assert differences(RUN, RUN) == ()
    assert differences(RUN, resumed) == ()  # a file only one process loaded is no difference


def test_another_checkout_with_the_same_content_is_the_same_code():
    assert differences(RUN, another(script="/b/train.py")) == ()


def test_each_kind_of_difference_is_said():
    assert differences(RUN, another(executable="/other/bin/python")) == (
        "interpreter /venv/bin/python vs /other/bin/python",
    )
    assert differences(RUN, another(torch="2.12.0+cpu")) == ("torch 2.13.0+cpu vs 2.12.0+cpu",)
    assert differences(RUN, another(python="3.12.1")) == ("Python 3.11.7 vs 3.12.1",)
    changed = another(code={**RUN.code, "model.py": "5" * 64})
    assert differences(RUN, changed) == ("code: model.py",)
    renamed = another(script="/b/train_v2.py", code={"train_v2.py": "6" * 64})
    assert differences(RUN, renamed) == ("script /a/train.py vs /b/train_v2.py",)


def test_across_needs_both_environments_and_a_difference():
    def observed(environment):
        return {None: Observation(rank=None, updates={}, environment=environment)}

    assert across({CONTINUOUS: observed(RUN), RESUMED: observed(RUN)}) is None
    assert across({CONTINUOUS: observed(RUN), RESUMED: observed(None)}) is None  # an older observer's records
    assert across({CONTINUOUS: observed(RUN)}) is None
    found = across({CONTINUOUS: observed(RUN), RESUMED: observed(another(torch="2.12.0+cpu"))})
    assert found is not None and found.differs == ("torch 2.13.0+cpu vs 2.12.0+cpu",)
    assert found.run.code_sha256 == found.resume.code_sha256 and found.run.files == 3


def test_an_environment_record_that_is_not_one_reads_as_none():
    assert Environment.of({"executable": "/p", "python": "3", "torch": "2", "script": "s"}) is None
    assert Environment.of("python") is None
    assert Environment.of({**vars(RUN)}) == RUN
