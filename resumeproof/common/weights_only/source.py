"""Bytes of the file under check, read by offset: from memory, or from disk without holding it all."""

import os
import zlib
from dataclasses import dataclass, field

from resumeproof.common.weights_only.errors import Refusal

CHUNK = 1 << 20  # CRC-32s of large storages are computed a MiB at a time


@dataclass(frozen=True)
class Source:
    """Exactly `size` bytes; `read` refuses to return fewer than asked for."""

    size: int
    data: bytes | None = None  # the file's bytes, when the caller already has them
    fd: int | None = field(default=None, repr=False)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise Refusal(f"a zip structure at byte {offset} reaches past the end of the file")
        if self.data is not None:
            return self.data[offset : offset + length]
        chunks, done = [], 0
        while done < length:
            chunk = os.pread(self.fd, length - done, offset + done)  # type: ignore[arg-type]
            if not chunk:  # the file shrank while it was read
                raise Refusal(f"the file ends at byte {offset + done} while it is read")
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)

    def crc32(self, offset: int, length: int) -> int:
        if self.data is not None:
            return zlib.crc32(memoryview(self.data)[offset : offset + length])
        crc = 0
        for start in range(offset, offset + length, CHUNK):
            crc = zlib.crc32(self.read(start, min(CHUNK, offset + length - start)), crc)
        return crc
