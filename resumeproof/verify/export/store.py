"""The destination of an export: a local folder, or any fsspec URL (s3://bucket/prefix, gs://..., file://...).

Both are used alike, by keys relative to DEST (`exports/<id>/checkpoint.pt`). A file appears whole or not at
all: a local one through fingerprint.write_atomic (fsynced, read back, renamed into place, its folder fsynced),
an object when its upload completes. fsspec is imported only for a URL, so a local DEST needs none of it; a URL
reaches its store with that store's usual configuration (for s3://, the AWS variables and files, or
`FSSPEC_S3_*`). Every failure of the store is one line naming DEST, the store's own error kept for --debug.
"""

import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Protocol

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError, one_line

URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
INSTALL = "pip install 'resumeproof[export]'"
Fill = Callable[[BinaryIO], object]  # writes a file's bytes into the stream it is given


class StoreError(ResumeproofError):
    """DEST cannot be used: not reachable, not writable, not an export's, or inside RUN."""


class Store(Protocol):
    @property
    def url(self) -> str: ...  # DEST as the user typed it

    def write(self, key: str, fill: Fill) -> None: ...
    def read_text(self, key: str) -> str | None: ...  # None: no such file
    def children(self, key: str) -> list[str]: ...  # the names under a folder ("" for DEST itself)
    def remove(self, key: str) -> None: ...  # a file, or a folder with everything under it
    def local(self, key: str) -> Path | None: ...  # the file itself where DEST is a local folder
    def download(self, key: str, target: Path) -> None: ...  # FileNotFoundError where the file is missing


def open_store(dest: str, run: Path) -> Store:
    """DEST as a store; refused where it lies inside RUN (the copy would leave with the machine)."""
    store: LocalStore | RemoteStore = RemoteStore(dest) if URL.match(dest) else LocalStore(Path(dest), dest)
    folder = store.root if isinstance(store, LocalStore) else store.local_folder()
    if folder is not None:
        where, run = folder.resolve(), run.resolve()
        if where == run or run in where.parents:
            raise StoreError(f"DEST {dest}: inside RUN {run}; an export must leave the run's folder")
        if where.exists() and not where.is_dir():
            raise StoreError(f"DEST {dest}: not a directory")
    return store


@dataclass(frozen=True)
class LocalStore:
    root: Path
    url: str

    def write(self, key: str, fill: Fill) -> None:
        path = self.root / key
        _mkdirs(path.parent)
        fingerprint.write_atomic(path, fill)

    def read_text(self, key: str) -> str | None:
        try:
            return (self.root / key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def children(self, key: str) -> list[str]:
        folder = self.root / key
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def remove(self, key: str) -> None:
        path = self.root / key
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)

    def local(self, key: str) -> Path | None:
        return self.root / key

    def download(self, key: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / key, target)


def _mkdirs(folder: Path) -> None:
    """Create `folder` and its missing parents, each made durable in its parent."""
    for missing in reversed([f for f in (folder, *folder.parents) if not f.exists()]):
        missing.mkdir(exist_ok=True)
        fingerprint.fsync_dir(missing.parent)


class RemoteStore:
    """DEST through fsspec. A listing is never served from fsspec's cache: another process may have changed it."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            import fsspec  # late: only a URL needs it
        except ImportError:
            raise StoreError(f"DEST {url}: a URL needs fsspec: {INSTALL}") from None
        with self._said("open"):
            self.fs, self.root = fsspec.url_to_fs(url)

    def local_folder(self) -> Path | None:
        """The folder of a file:// DEST, which may not lie inside RUN either."""
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        return Path(self.root) if "file" in protocols else None

    def write(self, key: str, fill: Fill) -> None:
        with self._said(f"write {key}"), self.fs.open(self._key(key), "wb") as f:
            fill(f)

    def read_text(self, key: str) -> str | None:
        with self._said(f"read {key}"):
            try:
                data: bytes = self.fs.cat_file(self._key(key))
            except FileNotFoundError:
                return None
        return data.decode("utf-8", errors="replace")

    def children(self, key: str) -> list[str]:
        with self._said(f"list {key or 'DEST'}"):
            self.fs.invalidate_cache()
            try:
                found = self.fs.ls(self._key(key), detail=False)
            except FileNotFoundError:
                return []
        return sorted(PurePosixPath(str(p)).name for p in found)

    def remove(self, key: str) -> None:
        with self._said(f"remove {key}"):
            self.fs.rm(self._key(key), recursive=True)

    def local(self, key: str) -> Path | None:
        return None

    def download(self, key: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._said(f"read {key}", let=FileNotFoundError):
            self.fs.get_file(self._key(key), str(target))

    def _key(self, key: str) -> str:
        return f"{self.root.rstrip('/')}/{key}" if key else self.root

    @contextmanager
    def _said(self, what: str, let: type[BaseException] | tuple[()] = ()) -> Iterator[Any]:
        """Any failure of the store as one line naming DEST: fsspec's backends raise their own kinds."""
        try:
            yield
        except let:
            raise
        except Exception as err:
            raise StoreError(f"DEST {self.url}: cannot {what}: {one_line(err)}") from err
