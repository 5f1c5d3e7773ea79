"""The opcodes the pickle machine runs, their names for messages, and the shape of a GLOBAL's names."""

import pickle
import re

# torch 2.13's weights_only unpickler runs these and also NEWOBJ, EMPTY_SET and SHORT_BINSTRING,
# which torch.save never writes for protocol 2 or 3 and which are therefore refused here.
OPCODES = {name: getattr(pickle, name) for name in (
    "PROTO", "STOP", "NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT",
    "BINUNICODE", "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "MARK", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "APPEND", "APPENDS", "SETITEM", "SETITEMS", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "GLOBAL",
    "REDUCE", "BUILD", "BINPERSID",
)}  # fmt: skip
_NAMES = {
    code[0]: name for name, code in vars(pickle).items() if name.isupper() and type(code) is bytes and len(code) == 1
}
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
MAX_NAME = 200


def opname(code: int | None) -> str:
    return "the end of data.pkl" if code is None else f"opcode {_NAMES.get(code, hex(code))}"


def is_dotted(text: bytes, dots: bool = True) -> bool:
    """A module path (dots allowed) or a plain name: what torch.save's globals look like."""
    parts = text.split(b".") if dots else [text]
    return 0 < len(text) <= MAX_NAME and all(_IDENTIFIER.fullmatch(part) for part in parts)
