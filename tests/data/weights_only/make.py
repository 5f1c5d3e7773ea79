"""Write the regression files of issue 7 beside this module, one per class of file the check once got wrong.

    python -B -m tests.data.weights_only.make     # from the repository's root

Every file must be refused by the torch-free check, in milliseconds and bounded memory
(tests/common/test_weights_only.py, which also runs this module to compare its FILES with the files
here). Each is built from a real torch.save archive, re-written with the torch-exact zip writer of
tests/fuzz, so that only the named defect differs from what torch.save writes. Payloads only create
a file named MARKER in the current directory.
"""

import io
import pickle
import struct
from collections.abc import Callable
from pathlib import Path

import torch

from tests.fuzz import zipwriter
from tests.fuzz.pickles import P, marker_payload

HERE = Path(__file__).resolve().parent


def saved(obj: object) -> tuple[str, list[zipwriter.Record]]:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return zipwriter.read(buffer.getvalue())


def with_pickle(data_pkl: bytes, obj: object = None) -> bytes:
    prefix, records = saved({"w": torch.ones(2)} if obj is None else obj)
    records[0] = zipwriter.Record("data.pkl", data_pkl)
    return zipwriter.write(records, zipwriter.Layout(prefix=prefix))


def edited(change: Callable[[list[zipwriter.Record], zipwriter.Layout], None], obj: object = None) -> bytes:
    prefix, records = saved({"w": torch.ones(2)} if obj is None else obj)
    layout = zipwriter.Layout(prefix=prefix)
    change(records, layout)
    return zipwriter.write(records, layout)


def record(name: str, records: list[zipwriter.Record]) -> zipwriter.Record:
    return next(r for r in records if r.name == name)


def _set(name: str, value: bytes) -> Callable[[list[zipwriter.Record], zipwriter.Layout], None]:
    return lambda records, layout: setattr(record(name, records), "data", value)


PAYLOAD = marker_payload("os.system", "MARKER")


def pid(storage_class: str = "FloatStorage", numel: int = 2) -> bytes:
    """The persistent id of storage data/0, loaded: ('storage', torch.<class>, '0', 'cpu', numel) BINPERSID."""
    fields = P.str("storage") + P.global_("torch", storage_class) + P.str("0") + P.str("cpu") + P.int(numel)
    return P.mark() + fields + P.op("TUPLE") + P.op("BINPERSID")


def tensor(*args: bytes, storage: bytes | None = None) -> bytes:
    """_rebuild_tensor_v2 applied to data/0 and the argument encodings given."""
    rebuild = P.global_("torch._utils", "_rebuild_tensor_v2")
    return rebuild + P.mark() + (storage or pid()) + b"".join(args) + P.op("TUPLE") + P.op("REDUCE")


def tensor_call(*args: bytes, storage: bytes | None = None) -> bytes:
    return P.proto() + tensor(*args, storage=storage)


HOOKS = P.global_("collections", "OrderedDict") + P.op("EMPTY_TUPLE") + P.op("REDUCE")
GOOD_ARGS = (P.int(0), P.ints_tuple(2), P.ints_tuple(1), P.op("NEWFALSE"), HOOKS)

FILES: dict[str, Callable[[], bytes]] = {
    # Container tricks: two readers, two data.pkl.
    "case_insensitive_duplicate": lambda: edited(lambda r, _: r.insert(1, zipwriter.Record("DATA.PKL", PAYLOAD))),
    "second_central_directory": lambda: edited(
        lambda r, layout: (
            setattr(layout, "second_directory", True),
            layout.decoy_records.append(zipwriter.Record("data.pkl", PAYLOAD)),
        )
    ),
    "bytes_before_the_zip": lambda: edited(lambda _, layout: setattr(layout, "before", b"\0" * 64)),
    "nested_prefix": lambda: edited(lambda r, _: r.append(zipwriter.Record("archive/data.pkl", PAYLOAD))),
    "extra_constants_pkl": lambda: edited(lambda r, _: r.append(zipwriter.Record("constants.pkl", PAYLOAD))),
    "duplicate_record": lambda: edited(lambda r, _: r.insert(5, zipwriter.Record("data/0", record("data/0", r).data))),
    "deflated_member": lambda: edited(lambda r, _: setattr(record("byteorder", r), "method", 8)),
    "lzma_member": lambda: edited(lambda r, _: setattr(record("data.pkl", r), "method", 14)),
    "unknown_compression_method": lambda: edited(lambda r, _: setattr(record("data.pkl", r), "method", 99)),
    "encrypted_member": lambda: edited(lambda r, _: setattr(record("data/0", r), "flags", 0x0809)),
    "storage_crc_mismatch": lambda: edited(lambda r, _: setattr(record("data/0", r), "crc", 1)),
    # Records the check once never read.
    "version_999": lambda: edited(_set("version", b"999\n")),
    "byteorder_middle": lambda: edited(_set("byteorder", b"middle")),
    "storage_alignment_63": lambda: edited(_set(".storage_alignment", b"63")),
    "serialization_id_text": lambda: edited(_set(".data/serialization_id", b"x" * 40)),
    "storage_claims_400mb": lambda: with_pickle(tensor_call(*GOOD_ARGS, storage=pid(numel=10**8)) + P.op("STOP")),
    # A pickle reader looser than torch's.
    "build_on_a_list": lambda: with_pickle(
        P.proto() + P.op("EMPTY_LIST") + P.op("EMPTY_DICT") + P.op("BUILD") + P.op("STOP")
    ),
    "empty_appends_on_an_int": lambda: with_pickle(P.proto() + P.int(1) + P.mark() + P.op("APPENDS") + P.op("STOP")),
    "setitem_on_a_list": lambda: with_pickle(
        P.proto() + P.op("EMPTY_LIST") + P.int(0) + P.int(1) + P.op("SETITEM") + P.op("STOP")
    ),
    "parameter_arguments_unchecked": lambda: with_pickle(
        P.proto()
        + P.global_("torch._utils", "_rebuild_parameter")
        + P.str("x")
        + P.int(5)
        + P.op("NONE")
        + P.op("TUPLE3")
        + P.op("REDUCE")
        + P.op("STOP"),
        obj=[],
    ),
    "rebuild_tensor_v2_with_5_arguments": lambda: with_pickle(tensor_call(*GOOD_ARGS[:4]) + P.op("STOP")),
    "rebuild_tensor_v2_with_9_arguments": lambda: with_pickle(
        tensor_call(*GOOD_ARGS, P.op("NONE"), P.op("NONE"), P.op("NONE")) + P.op("STOP")
    ),
    "storage_type_as_a_string": lambda: with_pickle(
        tensor_call(*GOOD_ARGS).replace(P.global_("torch", "FloatStorage"), P.str("FloatStorage")) + P.op("STOP")
    ),
    "storage_key_as_an_int": lambda: with_pickle(
        tensor_call(*GOOD_ARGS).replace(P.str("0"), P.int(0), 1) + P.op("STOP")
    ),
    "size_beyond_int64": lambda: with_pickle(
        tensor_call(P.int(0), P.long_tuple(2**64), P.ints_tuple(1), P.op("NEWFALSE"), HOOKS) + P.op("STOP")
    ),
    "one_storage_key_two_dtypes": lambda: with_pickle(
        P.proto()
        + P.op("EMPTY_LIST")
        + P.mark()
        + tensor(*GOOD_ARGS)
        + tensor(*GOOD_ARGS, storage=pid("DoubleStorage", 1))
        + P.op("APPENDS")
        + P.op("STOP")
    ),
    "build_rewrites_a_storage": lambda: with_pickle(
        tensor_call(
            P.int(0),
            P.ints_tuple(10**6),
            P.ints_tuple(1),
            P.op("NEWFALSE"),
            HOOKS,
            storage=pid() + P.op("EMPTY_DICT") + P.str("_size") + P.int(10**6) + P.op("SETITEM") + P.op("BUILD"),
        )
        + P.op("STOP")
    ),
    # Crashes instead of refusals, and bombs.
    "nested_10000_deep": lambda: with_pickle(
        P.proto() + P.op("EMPTY_LIST") * 10_000 + P.op("APPEND") * 9_999 + P.op("STOP"), obj=[]
    ),
    "tuples_nested_100000_deep": lambda: with_pickle(
        P.proto() + P.op("NONE") + P.op("TUPLE1") * 100_000 + P.op("EMPTY_DICT") + P.op("SETITEM") + P.op("STOP"),
        obj=[],
    ),
    "memo_index_2_to_28": lambda: with_pickle(
        P.proto() + P.op("EMPTY_LIST") + P.op("LONG_BINPUT") + struct.pack("<I", 2**28) + P.op("STOP"), obj=[]
    ),
    "set_copies_bomb": lambda: with_pickle(
        P.proto()
        + P.op("EMPTY_LIST")
        + P.put(0)
        + (P.mark() + P.int(0) * 1_000 + P.op("APPENDS")) * 20
        + P.op("EMPTY_LIST")
        + (P.global_("builtins", "set") + P.get(0) + P.op("TUPLE1") + P.op("REDUCE") + P.op("APPEND")) * 2_000
        + P.op("STOP"),
        obj=[],
    ),
    # Code that would run: refused unexecuted.
    "os_system_payload": lambda: with_pickle(PAYLOAD, obj=[]),
    "protocol_4_stack_global_payload": lambda: with_pickle(pickle.dumps(_Payload(), protocol=4), obj=[]),
}


class _Payload:
    def __reduce__(self) -> tuple:
        import os

        return os.system, ("touch MARKER",)


def main() -> None:
    for name, build in FILES.items():
        (HERE / f"{name}.pt").write_bytes(build())
    print(f"wrote {len(FILES)} files to {HERE}")


if __name__ == "__main__":
    main()
