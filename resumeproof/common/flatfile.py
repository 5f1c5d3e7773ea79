"""The classic flat file's layout, and what it cannot hold (resumeproof.kit.flat reads and writes it).

Little-endian: [int32 step][int32 n_params][n_params float32 weights][n_params float32 m]
[n_params float32 v], parameters in the model's parameter order: exactly 8 + 12 * n_params bytes.
"""

import struct

HEADER = struct.Struct("<ii")
LOST = "weights and Adam moments only, in float32: no scheduler, generators, data position, step counter or history"


def size(n_params: int) -> int:
    return HEADER.size + 12 * n_params
