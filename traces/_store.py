"""Where a run's files live: a local folder, or a folder in object storage (``s3://``, ``gs://``).

Every writer and reader of a run goes through a ``RunStore``: whole-file atomic puts, listing,
reading, deleting, and streams for files too large to hold in memory. Object stores are reached
through ``pyarrow.fs`` (``FileSystem.from_uri``), whose S3 and GCS clients read credentials the
way the providers' SDKs do (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws``,
``AWS_ENDPOINT_URL``; ``GOOGLE_APPLICATION_CREDENTIALS``, ...). A URI that carries credentials
itself is refused: it would end up in the manifest, in logs and in shell history.

Atomicity: a local file is written by ``env.files.atomic_write`` (a hidden temporary name in its
final folder, fsynced and renamed), so no reader ever sees half a file; an object store makes an
object visible only once its upload completes, so the final key is written directly.
"""

from __future__ import annotations

import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import IO, TypeGuard
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from env.errors import BadInput
from env.files import atomic_write, fsync_dir

OBJECT_SCHEMES = ("s3", "gs", "gcs")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# query parameters of pyarrow's URIs that carry credentials (access_key, secret_key, session_token, ...)
_SECRET_PARAM = re.compile(r"(key|secret|token|password|credential)", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    """A file directly inside a listed folder; size and time are None where not asked for."""

    name: str
    size: int | None = None
    mtime_ns: int | None = None


def is_uri(where: object) -> TypeGuard[str]:
    return isinstance(where, str) and bool(_SCHEME.match(where))


def _display(uri: str) -> str:
    """``uri`` without user info or query: safe to print whatever it held."""
    parts = urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


def check_uri(uri: str, what: str = "--out") -> None:
    """Refuse URIs gridbench does not take: other schemes, and any credentials in the URI."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in OBJECT_SCHEMES:
        raise BadInput(what, "", f"{scheme}:// is not supported: give a local folder, s3://BUCKET/PREFIX "
                                 "or gs://BUCKET/PREFIX")
    shown = _display(uri)
    if "@" in parts.netloc:
        raise BadInput(what, "", f"{shown}: credentials in the URI are refused; set them in the environment "
                                 "or the provider's config file (docs/cluster.md)")
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _SECRET_PARAM.search(name):
            raise BadInput(what, "", f"{shown}: the URI parameter {name!r} carries a credential and is refused; "
                                     "set it in the environment or the provider's config file (docs/cluster.md)")
    if not parts.netloc:
        raise BadInput(what, "", f"{shown}: no bucket")


def _small_puts(fs: pafs.FileSystem) -> pafs.FileSystem:
    """The same S3 file system with delayed opens, which upload a small file in one PUT instead
    of a three-request multipart upload (most of a run's files are small). The options are the
    ones ``from_uri`` resolved (credentials are not among them: the SDK's chain supplies those)."""
    if not isinstance(fs, pafs.S3FileSystem):
        return fs
    try:
        options = dict(fs.__reduce__()[1][0])
        options["allow_delayed_open"] = True
        return pafs.S3FileSystem(**options)
    except (TypeError, ValueError, IndexError, KeyError):  # another pyarrow's pickling: keep its defaults
        return fs


def cache_home() -> Path:
    """gridbench's cache folder: journals of object-storage runs, local copies, built variants."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gridbench"


class RunStore(ABC):
    """A folder that holds a run (or runs): paths inside it are relative, '/'-separated."""

    local: bool
    location: str  # as the user gave it; never holds credentials

    @property
    @abstractmethod
    def name(self) -> str: ...

    @property
    @abstractmethod
    def where(self) -> Path | str:
        """The run as the user names it: a local ``Path``, or its URI."""

    @abstractmethod
    def child(self, name: str) -> RunStore: ...

    @property
    @abstractmethod
    def filesystem(self) -> pafs.FileSystem:
        """What pyarrow.dataset needs to read this store's files."""

    @abstractmethod
    def path(self, rel: str = "") -> str:
        """The path of ``rel`` for ``filesystem``."""

    @abstractmethod
    def file(self, rel: str) -> PurePath:
        """``rel`` as a path object (a local ``Path``, or the object's path in its bucket)."""

    def display(self, rel: str = "") -> str:
        """How ``rel`` is named in messages: a local path or a URI."""
        return f"{self.location.rstrip('/')}/{rel}" if rel else self.location

    @abstractmethod
    def local_dir(self) -> Path:
        """A local folder for what stays on this machine (server logs, staging of uploads): the
        run folder itself for a local run, a folder under the user's cache for a remote one."""

    @abstractmethod
    def check_location(self, what: str = "--out") -> None:
        """``BadInput`` when the run's place cannot be written (an object store's bucket that is
        not there)."""

    @abstractmethod
    def exists(self, rel: str = "") -> bool: ...

    @abstractmethod
    def is_dir(self, rel: str = "") -> bool: ...

    @abstractmethod
    def list(self, rel: str, *, stats: bool = False) -> list[Entry]:
        """Files directly inside folder ``rel`` (none when it is absent), hidden ones included."""

    @abstractmethod
    def put(self, rel: str, data: bytes) -> PurePath:
        """Write a whole file atomically; returns its path."""

    @abstractmethod
    def read_bytes(self, rel: str) -> bytes:
        """``FileNotFoundError`` when absent."""

    @abstractmethod
    def delete(self, rel: str) -> bool:
        """Remove a file; False when it was not there."""

    @abstractmethod
    def delete_tree(self, rel: str) -> None: ...

    @abstractmethod
    def open_write(self, rel: str) -> AbstractContextManager[IO[bytes]]:
        """A stream onto ``rel``; locally flushed and fsynced on close. Not atomic by itself:
        write under a name nobody reads and ``move`` it into place."""

    @abstractmethod
    def move(self, src: str, dst: str) -> None:
        """Put ``src`` in place of ``dst`` (a rename locally; copy and delete in object storage)."""

    @abstractmethod
    def stat(self, rel: str) -> Entry | None: ...

    def put_folder(self, folder: Path, last: tuple[str, ...] = ()) -> int:
        """Put every file under a local ``folder`` here (same relative paths), the files named in
        ``last`` after all others (an index that says the rest is there); returns the count."""
        if not folder.is_dir():
            return 0
        files = sorted((p for p in folder.rglob("*") if p.is_file()),
                       key=lambda p: (p.relative_to(folder).as_posix() in last, p.relative_to(folder).as_posix()))
        for p in files:
            self.put(p.relative_to(folder).as_posix(), p.read_bytes())
        return len(files)

    def __str__(self) -> str:
        return self.location

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunStore) and type(other) is type(self) and other.location == self.location

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.location))


class LocalStore(RunStore):
    local = True

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.location = str(self.root)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def where(self) -> Path:
        return self.root

    def child(self, name: str) -> LocalStore:
        return LocalStore(self.root / name)

    @property
    def filesystem(self) -> pafs.FileSystem:
        return pafs.LocalFileSystem()

    def path(self, rel: str = "") -> str:
        return str((self.root / rel).absolute()) if rel else str(self.root.absolute())

    def file(self, rel: str) -> Path:
        return self.root / rel

    def local_dir(self) -> Path:
        return self.root

    def check_location(self, what: str = "--out") -> None:
        pass  # a local folder is made when it is first written

    def exists(self, rel: str = "") -> bool:
        return (self.root / rel).exists()

    def is_dir(self, rel: str = "") -> bool:
        return (self.root / rel).is_dir()

    def list(self, rel: str, *, stats: bool = False) -> list[Entry]:
        try:
            with os.scandir(self.root / rel) as it:
                entries = [e for e in it if e.is_file()]
                if not stats:
                    return [Entry(e.name) for e in entries]
                out = []
                for e in entries:
                    try:
                        st = e.stat()
                    except FileNotFoundError:  # removed between the listing and the look
                        continue
                    out.append(Entry(e.name, st.st_size, st.st_mtime_ns))
                return out
        except (FileNotFoundError, NotADirectoryError):
            return []

    def put(self, rel: str, data: bytes) -> Path:
        return atomic_write(self.file(rel), data)

    def read_bytes(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def delete(self, rel: str) -> bool:
        try:
            (self.root / rel).unlink()
        except FileNotFoundError:
            return False
        return True

    def delete_tree(self, rel: str) -> None:
        shutil.rmtree(self.root / rel, ignore_errors=True)

    @contextmanager
    def open_write(self, rel: str) -> Iterator[IO[bytes]]:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            if not err.filename:
                err.filename = str(path)
            raise

    def move(self, src: str, dst: str) -> None:
        os.replace(self.root / src, self.root / dst)
        fsync_dir((self.root / dst).parent)

    def stat(self, rel: str) -> Entry | None:
        try:
            st = (self.root / rel).stat()
        except FileNotFoundError:
            return None
        return Entry(PurePosixPath(rel).name, st.st_size, st.st_mtime_ns)


class ObjectStore(RunStore):
    """A prefix in S3 or GCS. Object stores have no folders: a "folder" is a key prefix, and a
    missing one lists as empty."""

    local = False

    def __init__(self, uri: str, *, what: str = "--out", _fs: pafs.FileSystem | None = None,
                 _root: str | None = None):
        check_uri(uri, what)
        parts = urlsplit(uri)
        self.location = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}" + (
            f"?{parts.query}" if parts.query else "")
        if _fs is None:
            try:
                _fs, _root = pafs.FileSystem.from_uri(uri)
            except (ValueError, OSError) as err:  # pyarrow's ArrowInvalid is a ValueError
                raise BadInput(what, "", f"{_display(uri)}: {str(err).splitlines()[0]}") from None
            _fs = _small_puts(_fs)
        self.fs = _fs
        self.root = (_root or "").rstrip("/")

    @property
    def name(self) -> str:
        return PurePosixPath(self.root).name

    @property
    def where(self) -> str:
        return self.location

    def child(self, name: str) -> ObjectStore:
        parts = urlsplit(self.location)
        path = f"{parts.path.rstrip('/')}/{name}"
        uri = f"{parts.scheme}://{parts.netloc}{path}" + (f"?{parts.query}" if parts.query else "")
        return ObjectStore(uri, _fs=self.fs, _root=f"{self.root}/{name}")

    def display(self, rel: str = "") -> str:
        base = _display(self.location).rstrip("/")
        return f"{base}/{rel}" if rel else base

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self.fs

    def path(self, rel: str = "") -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def file(self, rel: str) -> PurePosixPath:
        return PurePosixPath(self.path(rel))

    def local_dir(self) -> Path:
        parts = urlsplit(self.location)
        return cache_home() / "runs" / parts.scheme / parts.netloc / parts.path.strip("/")

    def exists(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.path(rel)).type != pafs.FileType.NotFound

    def is_dir(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.path(rel)).type == pafs.FileType.Directory

    def list(self, rel: str, *, stats: bool = False) -> list[Entry]:
        base = self.path(rel)
        infos = self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=False))
        return [Entry(PurePosixPath(i.path).name, i.size, i.mtime_ns) for i in infos if i.type == pafs.FileType.File]

    def put(self, rel: str, data: bytes) -> PurePosixPath:
        # one upload: the object appears whole when it completes, or not at all
        with self.fs.open_output_stream(self.path(rel)) as f:
            f.write(data)
        return self.file(rel)

    def read_bytes(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self.path(rel)) as f:
            return f.read()

    def delete(self, rel: str) -> bool:
        try:
            self.fs.delete_file(self.path(rel))
        except FileNotFoundError:
            return False
        return True

    def delete_tree(self, rel: str) -> None:
        try:
            self.fs.delete_dir_contents(self.path(rel), missing_dir_ok=True)
        except FileNotFoundError:
            pass

    @contextmanager
    def open_write(self, rel: str) -> Iterator[IO[bytes]]:
        with self.fs.open_output_stream(self.path(rel)) as f:
            yield f

    def move(self, src: str, dst: str) -> None:
        self.fs.copy_file(self.path(src), self.path(dst))
        self.delete(src)

    def check_location(self, what: str = "--out") -> None:
        """``BadInput`` when the bucket is not there (or not visible with these credentials)."""
        bucket = self.root.split("/", 1)[0]
        try:
            found = self.fs.get_file_info(bucket).type != pafs.FileType.NotFound
        except OSError as err:
            raise BadInput(what, "", f"{self.display()}: {str(err).splitlines()[0]}") from None
        if not found:
            raise BadInput(what, "", f"{self.display()}: no bucket {bucket!r} (or not visible with these credentials)")

    def stat(self, rel: str) -> Entry | None:
        info = self.fs.get_file_info(self.path(rel))
        if info.type != pafs.FileType.File:
            return None
        return Entry(PurePosixPath(info.path).name, info.size, info.mtime_ns)


def open_store(where: str | os.PathLike | RunStore, what: str = "--out") -> RunStore:
    """The store of a local path or an ``s3://``/``gs://`` URI (``BadInput`` for other URIs and
    for URIs that carry credentials)."""
    if isinstance(where, RunStore):
        return where
    if is_uri(where):
        return ObjectStore(where, what=what)
    return LocalStore(where)
