"""The weights_only check's messages (common/weights_only/errors.py): attacker-chosen text quoted short and printable,
every message on one line."""

from resumeproof.common.weights_only.errors import QUOTE_CHARS, one_line, quote


def test_a_quote_is_short_printable_and_says_where_it_was_cut():
    assert quote("os.system") == "'os.system'"
    assert quote(b"evil\n\x00\xff") == "'evil???'"  # bytes read as latin-1, every unprintable shown as '?'
    long = quote("x" * (QUOTE_CHARS + 1))
    assert long == repr("x" * QUOTE_CHARS + "...")


def test_a_message_is_one_line():
    assert one_line("a\n  b\tc \r\n") == "a b c"
