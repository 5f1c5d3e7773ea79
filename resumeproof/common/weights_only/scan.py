"""The globals a pickle stream names, found statically: nothing in it is resolved or run."""

import _compat_pickle
import pickletools
from typing import Any

from resumeproof.common.weights_only.errors import Refusal

_MARK, _UNKNOWN = object(), object()
_STRINGS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


def globals_in(data: bytes) -> list[str]:
    """'module.name' for every GLOBAL, INST and STACK_GLOBAL, first occurrence first, with the Python 2
    names mapped as Python's unpickler maps them; refuse a STACK_GLOBAL whose operands are not literal."""
    stack: list[Any] = []
    memo: dict[Any, Any] = {}
    found: dict[str, None] = {}
    protocol = 0
    try:
        for opcode, arg, _ in pickletools.genops(data):
            name = opcode.name
            if name == "PROTO":
                protocol = arg if type(arg) is int else 0
            elif name in ("GLOBAL", "INST"):
                module, _, attribute = str(arg).partition(" ")
                found.setdefault(_mapped(module, attribute, protocol), None)
            elif name == "STACK_GLOBAL":
                attribute, module = _pop(stack), _pop(stack)
                if type(module) is not str or type(attribute) is not str:
                    raise Refusal("a STACK_GLOBAL whose module and name are not literal strings")
                found.setdefault(f"{module}.{attribute}", None)
            _effect(opcode, arg, stack, memo)
    except Refusal:
        raise
    except Exception as err:  # pickletools raises ValueError and others on malformed streams
        raise Refusal(f"malformed pickle ({type(err).__name__})") from None
    return list(found)


def _effect(opcode: pickletools.OpcodeInfo, arg: Any, stack: list[Any], memo: dict[Any, Any]) -> None:
    """The opcode's effect on a stack that only knows literal strings and marks."""
    name = opcode.name
    if name in _STRINGS:
        stack.append(arg if type(arg) is str else _UNKNOWN)
    elif name == "MARK":
        stack.append(_MARK)
    elif name in _PUTS or name == "MEMOIZE":
        memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1] if stack else _UNKNOWN
    elif name in _GETS:
        stack.append(memo.get(arg, _UNKNOWN))
    elif name == "STACK_GLOBAL":
        stack.append(_UNKNOWN)
    else:
        before = opcode.stack_before
        if pickletools.markobject in before:
            while stack and stack.pop() is not _MARK:
                pass
            before = before[: before.index(pickletools.markobject)]
        for _ in before:
            _pop(stack)
        stack.extend(_UNKNOWN for _ in opcode.stack_after)


def _pop(stack: list[Any]) -> Any:
    return stack.pop() if stack else _UNKNOWN


def _mapped(module: str, name: str, protocol: int) -> str:
    if protocol < 3:  # what Python's Unpickler(fix_imports=True) does with Python 2 names
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"
