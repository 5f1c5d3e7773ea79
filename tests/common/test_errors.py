"""The one exception and the one place that makes it an exit code (common/errors.py): an existing output refused, an
error one line and exit 2, its traceback with --debug, and anything else left to raise."""

import pytest

from resumeproof.common.errors import EXIT_ERROR, ResumeproofError, exit_on_error, refuse_existing


def test_an_existing_output_is_refused_a_dangling_link_too(tmp_path):
    refuse_existing(tmp_path / "new")  # absent: nothing to say
    (tmp_path / "file").write_text("")
    with pytest.raises(ResumeproofError, match=r"^--output \S+/file: already exists; refusing to touch it$"):
        refuse_existing(tmp_path / "file")
    (tmp_path / "link").symlink_to(tmp_path / "absent")
    with pytest.raises(ResumeproofError, match=r"^--resume-dir \S+/link: already exists"):
        refuse_existing(tmp_path / "link", "--resume-dir")


def test_an_error_is_one_line_and_exit_2_its_traceback_only_with_debug(capsys):
    with pytest.raises(SystemExit) as exited, exit_on_error("prog", debug=False):
        raise ResumeproofError("a\n  b")
    assert exited.value.code == EXIT_ERROR == 2 and capsys.readouterr().err == "prog: error: a b\n"
    with pytest.raises(SystemExit), exit_on_error("prog", debug=False):
        raise FileNotFoundError("no such file")  # an OSError is the user's to act on too
    with pytest.raises(ResumeproofError), exit_on_error("prog", debug=True):
        raise ResumeproofError("shown with its traceback")
    with pytest.raises(ValueError), exit_on_error("prog", debug=False):
        raise ValueError("a bug is no user error")
