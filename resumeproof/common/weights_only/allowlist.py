"""Every global torch 2.13's weights_only unpickler allows by default, and what this check makes of each.

All 144 names of `torch._weights_only_unpickler._get_allowed_globals()` are here (a test compares
the two sets). Each is a value (dtypes, classes, qschemes) or a function; only the calls
torch.save writes for plain data are modelled (calls.py, tensors.py), every other call of an
allowlisted function is refused with its reason.
"""

from resumeproof.common.weights_only import calls, tensors
from resumeproof.common.weights_only.values import DType, Function, Opaque, StorageClass

# name: (itemsize, rebuild, may require grad, complex)
_DTYPES = {
    "float64": (8, "v2", True, False), "float32": (4, "v2", True, False), "float16": (2, "v2", True, False),
    "bfloat16": (2, "v2", True, False), "int64": (8, "v2", False, False), "int32": (4, "v2", False, False),
    "int16": (2, "v2", False, False), "int8": (1, "v2", False, False), "uint8": (1, "v2", False, False),
    "bool": (1, "v2", False, False), "complex128": (16, "v2", True, True), "complex64": (8, "v2", True, True),
    "complex32": (4, "v3", True, True), "uint16": (2, "v3", False, False), "uint32": (4, "v3", False, False),
    "uint64": (8, "v3", False, False), "bits8": (1, "v3", False, False), "bits16": (2, "v3", False, False),
    "bits1x8": (1, "v3", False, False), "bits2x4": (1, "v3", False, False), "bits4x2": (1, "v3", False, False),
    "float8_e4m3fn": (1, "v3", True, False), "float8_e4m3fnuz": (1, "v3", True, False),
    "float8_e5m2": (1, "v3", True, False), "float8_e5m2fnuz": (1, "v3", True, False),
    "float8_e8m0fnu": (1, "v3", True, False), "float4_e2m1fn_x2": (1, "v3", True, False),
    # Quantized tensors are refused (tensors.py); sub-byte integers cannot be saved by torch 2.13.
    "qint8": (1, "", False, False), "quint8": (1, "", False, False), "qint32": (4, "", False, False),
    "quint4x2": (1, "", False, False), "quint2x4": (1, "", False, False),
    **{f"{kind}{bits}": (1, "", False, False) for kind in ("int", "uint") for bits in range(1, 8)},
}  # fmt: skip
DTYPES = {name: DType(name, size, rebuild, grad, cplx) for name, (size, rebuild, grad, cplx) in _DTYPES.items()}
# torch.<Name>Storage -> the dtype its elements have (torch.storage._dtype_to_storage_type_map)
LEGACY_STORAGES = {
    "Double": "float64", "Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
    "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexDouble": "complex128", "ComplexFloat": "complex64",
}  # fmt: skip
QUANTIZED_STORAGES = {
    "QInt8": "qint8",
    "QUInt8": "quint8",
    "QInt32": "qint32",
    "QUInt4x2": "quint4x2",
    "QUInt2x4": "quint2x4",
}
TENSOR_CLASSES = ("BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short")
QSCHEMES = (
    "per_tensor_affine",
    "per_tensor_symmetric",
    "per_channel_affine",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
)

# Why a storage class torch's loader knows is refused here: two that torch.save never writes, and one
# it writes that this check refuses on purpose.
_CUDA_STORAGE = (
    "a torch.cuda.*Storage class, which torch.save does not write (it names every device's storage torch.*Storage)"
)
_TYPED_STORAGE = "a torch.storage.TypedStorage, which torch.save does not write"
_QUANTIZED = (
    "a quantized tensor, refused deliberately: torch checks its quantizer arguments in C++, which is not modelled here"
)
_ATTRIBUTES = "loading sets Python attributes with setattr under names the file chooses, not modelled here"
_REFUSED_REBUILDS = {
    "torch._utils._rebuild_tensor": "the pre-v2 tensor rebuild, which torch.save no longer writes",
    "torch._utils._rebuild_qtensor": "quantized tensors: torch checks their quantizer arguments in C++",
    "torch._utils._rebuild_sparse_tensor": "sparse tensors: torch validates their indices against the tensor data",
    "torch._utils._rebuild_nested_tensor": "nested tensors are not plain CPU tensors",
    "torch._utils._rebuild_wrapper_subclass": "tensor subclasses are not plain tensors",
    "torch._utils._rebuild_meta_tensor_no_storage": "meta tensors have no data to check",
    "torch._utils._rebuild_device_tensor_from_numpy": "a tensor rebuilt from a numpy array (non-CPU devices)",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": "a tensor moved to a non-CPU device",
    "torch._utils._rebuild_parameter_with_state": f"a Parameter with attributes: {_ATTRIBUTES}",
    "torch._tensor._rebuild_from_type_v2": f"a tensor with attributes or of a subclass: {_ATTRIBUTES}",
}
_CALLS = {
    "collections.OrderedDict": calls.ordered_dict,
    "collections.Counter": calls.counter,
    "torch.Size": calls.size,
    "torch.device": calls.device,
    "torch.serialization._get_layout": calls.layout,
    "_codecs.encode": calls.encode,
    "builtins.bytearray": calls.bytearray_,
    "builtins.set": calls.set_,
    "builtins.complex": calls.complex_,
    "torch._utils._rebuild_tensor_v2": tensors.rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": tensors.rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": tensors.rebuild_parameter,
}


def _build() -> dict[str, object]:
    table: dict[str, object] = {f"torch.{name}": dtype for name, dtype in DTYPES.items()}
    for module in ("torch", "torch.cuda"):  # only torch.<Legacy>Storage appears in what torch.save writes
        for prefix, dtype in LEGACY_STORAGES.items():
            name = f"{module}.{prefix}Storage"
            table[name] = StorageClass(name, DTYPES[dtype], None if module == "torch" else _CUDA_STORAGE)
    for prefix, dtype in QUANTIZED_STORAGES.items():
        table[f"torch.{prefix}Storage"] = StorageClass(f"torch.{prefix}Storage", DTYPES[dtype], _QUANTIZED)
    table["torch.storage.UntypedStorage"] = StorageClass("torch.storage.UntypedStorage", None)
    table["torch.storage.TypedStorage"] = StorageClass("torch.storage.TypedStorage", None, _TYPED_STORAGE)
    for module in ("torch", "torch.cuda", "torch.sparse", "torch.cuda.sparse"):
        for prefix in TENSOR_CLASSES:
            if not (prefix == "Bool" and module.endswith("sparse")):
                table[f"{module}.{prefix}Tensor"] = Opaque(f"{module}.{prefix}Tensor")
    table.update({f"torch.{name}": Opaque(f"torch.{name}") for name in QSCHEMES})
    for name in ("torch.Tensor", "torch.nn.parameter.Parameter"):
        table[name] = Opaque(name)
    table.update({name: Function(name, call) for name, call in _CALLS.items()})
    table.update({name: Function(name, None, why) for name, why in _REFUSED_REBUILDS.items()})
    return table


ALLOWED = _build()


def lookup(module: str, name: str) -> object | None:
    """The stand-in for GLOBAL module.name, as torch resolves it; None when torch does not allow it."""
    if module == "__builtin__":  # protocol 2 writes builtins under their Python 2 name; torch maps it back
        module = "builtins"
    return ALLOWED.get(f"{module}.{name}")
