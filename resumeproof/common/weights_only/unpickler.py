"""A pickle machine at least as strict as torch 2.13's weights_only unpickler, that never runs anything.

It runs the opcodes torch/_weights_only_unpickler.py runs, with the same rules for the same
stack (APPEND(S) only on lists; SETITEM(S) only on dict, OrderedDict and Counter; BUILD only
where torch.save writes it, on an OrderedDict's attributes), resolves GLOBAL only through the
allowlist, and calls nothing but the checks in calls.py and tensors.py. Where torch is loose
and torch.save is not, it follows torch.save: protocol 2 or 3 declared once at the start,
memo entries numbered in order, no NEWOBJ, nothing after STOP. Every operation is paid for from
a work budget, tuples are bounded in depth before anything hashes them, and the memo is a
list that grows by one entry per BINPUT, so no index allocates memory.
"""

import struct
from collections import Counter, OrderedDict
from typing import Any

from resumeproof.common.weights_only import allowlist
from resumeproof.common.weights_only.budget import Budget
from resumeproof.common.weights_only.errors import Refusal, quote
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.opcodes import OPCODES, is_dotted, opname
from resumeproof.common.weights_only.tensors import Storages
from resumeproof.common.weights_only.values import Function

SETTABLE = (dict, OrderedDict, Counter)  # torch's _check_set_item_target
PROTOCOLS = (2, 3)  # torch.save's default, and the one it also loads without BINBYTES
_I4, _U4, _U2, _F8 = struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<H"), struct.Struct(">d")


def load(data: bytes, storages: Storages) -> Any:
    """The object data.pkl describes, with stand-ins for torch objects; refuse what torch might refuse."""
    return _Machine(data, storages).run()


class _Machine:
    def __init__(self, data: bytes, storages: Storages) -> None:
        self.data, self.pos, self.storages = data, 0, storages
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: list[Any] = []
        self.budget = Budget()
        self.ops = {code[0]: getattr(self, f"op_{name}") for name, code in OPCODES.items()}

    # -- the machine -----------------------------------------------------------------------------

    def run(self) -> Any:
        if self.data[:1] != b"\x80":
            raise Refusal("data.pkl does not start with the PROTO opcode torch.save writes")
        data, ops, budget, end, most = self.data, self.ops, self.budget, len(self.data), LIMITS.work
        while True:
            at = self.pos
            op = ops.get(data[at]) if at < end else None
            if op is None:
                raise Refusal(
                    f"data.pkl: {opname(data[at] if at < end else None)} at byte {at} is not one torch.save writes"
                )
            self.pos = at + 1
            budget.work += 1  # budget.spend(1), inlined: this loop runs once per opcode
            if budget.work > most:
                budget.spend(0)
            try:
                if op() is _STOP:
                    return self.stack.pop()
                if len(self.stack) > LIMITS.stack or len(self.metastack) > LIMITS.marks:
                    raise Refusal(f"more than {LIMITS.stack} values on the stack or {LIMITS.marks} MARKs open")
            except Refusal as err:
                raise Refusal(f"data.pkl at byte {at}: {err}") from None
            except (IndexError, TypeError, ValueError, KeyError, AttributeError, struct.error, OverflowError) as err:
                raise Refusal(f"data.pkl at byte {at}: {opname(data[at])} fails ({type(err).__name__})") from None

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise Refusal("data.pkl ends inside an opcode")
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Refusal("data.pkl ends inside an opcode")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def line(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise Refusal("data.pkl ends inside a GLOBAL name")
        text, self.pos = self.data[self.pos : end], end + 1
        return text

    def pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise Refusal("no MARK to pop to")
        items, self.stack = self.stack, self.metastack.pop()
        return items

    def top(self) -> Any:
        if not self.stack:
            raise Refusal("stack underflow")
        return self.stack[-1]

    def pop(self) -> Any:
        if not self.stack:
            raise Refusal("stack underflow")
        return self.stack.pop()

    def tuple_of(self, items: list[Any]) -> tuple:
        value = tuple(items)
        self.budget.made_tuple(value)
        return value

    # -- opcodes: constants ------------------------------------------------------------------------

    def op_PROTO(self) -> None:
        protocol = self.byte()
        if self.pos != 2 or protocol not in PROTOCOLS:
            raise Refusal(f"PROTO {protocol} (torch.save writes protocol 2, once, first)")

    def op_NONE(self) -> None:
        self.stack.append(None)

    def op_NEWTRUE(self) -> None:
        self.stack.append(True)

    def op_NEWFALSE(self) -> None:
        self.stack.append(False)

    def op_BININT(self) -> None:
        self.stack.append(_I4.unpack(self.take(4))[0])

    def op_BININT1(self) -> None:
        self.stack.append(self.byte())

    def op_BININT2(self) -> None:
        self.stack.append(_U2.unpack(self.take(2))[0])

    def op_LONG1(self) -> None:
        self.stack.append(int.from_bytes(self.take(self.byte()), "little", signed=True))

    def op_BINFLOAT(self) -> None:
        self.stack.append(_F8.unpack(self.take(8))[0])

    def op_BINUNICODE(self) -> None:
        length = _U4.unpack(self.take(4))[0]
        try:
            self.stack.append(self.take(length).decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            raise Refusal("a string that is not UTF-8") from None

    # -- opcodes: containers -----------------------------------------------------------------------

    def op_EMPTY_TUPLE(self) -> None:
        self.stack.append(self.tuple_of([]))

    def op_EMPTY_LIST(self) -> None:
        self.stack.append([])

    def op_EMPTY_DICT(self) -> None:
        self.stack.append({})

    def op_MARK(self) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def op_TUPLE(self) -> None:
        items = self.pop_mark()  # first: it makes the outer frame self.stack again
        self.stack.append(self.tuple_of(items))

    def op_TUPLE1(self) -> None:
        self._tuple_n(1)

    def op_TUPLE2(self) -> None:
        self._tuple_n(2)

    def op_TUPLE3(self) -> None:
        self._tuple_n(3)

    def _tuple_n(self, n: int) -> None:
        if len(self.stack) < n:
            raise Refusal("stack underflow")
        items = self.stack[-n:]
        del self.stack[-n:]
        self.stack.append(self.tuple_of(items))

    def op_APPEND(self) -> None:
        item = self.pop()
        self._list().append(item)

    def op_APPENDS(self) -> None:
        items = self.pop_mark()
        if not items:
            raise Refusal("an empty APPENDS, which torch.save never writes")
        self.budget.spend(len(items))
        self._list().extend(items)

    def _list(self) -> list:
        target = self.top()
        if type(target) is not list:
            raise Refusal(f"APPEND to a {type(target).__name__}: only lists take items")
        return target

    def op_SETITEM(self) -> None:
        value, key = self.pop(), self.pop()
        self._setitems([key, value])

    def op_SETITEMS(self) -> None:
        items = self.pop_mark()
        if not items or len(items) % 2:
            raise Refusal(f"SETITEMS of {len(items)} items (torch.save writes a positive even number)")
        self._setitems(items)

    def _setitems(self, items: list[Any]) -> None:
        target = self.top()
        if type(target) not in SETTABLE:
            raise Refusal(f"SETITEM on a {type(target).__name__}: only dict, OrderedDict and Counter take items")
        for index in range(0, len(items), 2):
            self.budget.spend(self.budget.hash_cost(items[index]))
            target[items[index]] = items[index + 1]

    # -- opcodes: memo ------------------------------------------------------------------------------

    def op_BINPUT(self) -> None:
        self._put(self.byte())

    def op_LONG_BINPUT(self) -> None:
        self._put(_U4.unpack(self.take(4))[0])

    def _put(self, index: int) -> None:
        if index != len(self.memo):  # the pickler numbers memo entries 0, 1, 2, ... and never reuses one
            raise Refusal(f"memo entry {index} put where torch.save would put entry {len(self.memo)}")
        self.memo.append(self.top())

    def op_BINGET(self) -> None:
        self._get(self.byte())

    def op_LONG_BINGET(self) -> None:
        self._get(_U4.unpack(self.take(4))[0])

    def _get(self, index: int) -> None:
        if index >= len(self.memo):
            raise Refusal(f"memo entry {index} is read before it is put")
        self.stack.append(self.memo[index])

    # -- opcodes: globals, calls, storages ----------------------------------------------------------

    def op_GLOBAL(self) -> None:
        module, name = self.line(), self.line()
        if not (is_dotted(module) and is_dotted(name, dots=False)):
            raise Refusal("GLOBAL with a malformed name")
        value = allowlist.lookup(module.decode(), name.decode())
        if value is None:
            raise Refusal(f"global {quote(module + b'.' + name)[1:-1]} is not allowed by weights_only loading")
        self.stack.append(value)

    def op_REDUCE(self) -> None:
        args, func = self.pop(), self.top()
        if type(func) is not Function:
            raise Refusal(f"REDUCE calls a {type(func).__name__}, which is not an allowed function")
        if func.call is None:
            raise Refusal(f"{func.name} is refused: {func.refused}")
        if type(args) is not tuple:
            raise Refusal(f"REDUCE arguments are a {type(args).__name__}, not the tuple torch.save writes")
        self.stack[-1] = func.call(self.budget, args)

    def op_BUILD(self) -> None:
        state, target = self.pop(), self.top()
        if type(target) is not OrderedDict:
            raise Refusal(f"BUILD on a {type(target).__name__}: torch.save writes BUILD only on an OrderedDict")
        if type(state) is not dict or not all(type(key) is str for key in state):
            raise Refusal("BUILD state of an OrderedDict that is not a dict of attribute names")
        self.budget.spend(len(state))
        vars(target).update(state)

    def op_BINPERSID(self) -> None:
        self.stack.append(self.storages.load(self.pop()))

    def op_STOP(self) -> object:
        if self.metastack or len(self.stack) != 1 or self.pos != len(self.data):
            raise Refusal("STOP with a MARK open, more than one value left, or bytes after it")
        return _STOP


_STOP = object()
