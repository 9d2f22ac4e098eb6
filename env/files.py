"""The one atomic write: no reader ever sees half a file, nor a folder half rebuilt.

Every file gridbench writes for someone to read (a maze, a set folder and its manifest, a run's
traces and manifest, a rewritten journal, the report, the viewer's files, a GIF or PNG, the
bundled model) is first written under a hidden temporary name in its destination's folder,
``.<name>.<pid>.tmp`` (``temp_path``), flushed and fsynced, and renamed onto the destination;
the folder is fsynced after the rename, so the new name survives a power cut. A failure removes
the temporary file and leaves the destination as it was. ``clean_partial`` (and anything else
tidying a folder) recognises leftovers of a killed writer with ``is_temp``.

Three shapes of the same write: ``atomic_write`` (the content in hand, or a function writing
it to the open file), ``atomic_path`` (a library that writes by file name) and
``atomic_folder`` (a folder built whole, then swapped in for the old one).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

TEMP_SUFFIX = ".tmp"


def temp_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: hidden, beside it, per process."""
    return path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")


def is_temp(name: str) -> bool:
    """A name ``temp_path`` gives (a killed writer's leftover once its process is gone)."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def fsync_dir(folder: Path) -> None:
    """Make the names in ``folder`` durable (a rename is only on disk once its folder is)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a folder; the rename itself is still atomic
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(tmp: Path, err: BaseException, path: Path) -> None:
    try:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
    except OSError:
        pass  # a disk turned read-only cannot take the temporary file back: the original error counts
    if isinstance(err, OSError) and not err.filename:
        err.filename = str(path)  # a full disk fails a write(), which names no file: name the one written


def atomic_write(path: str | os.PathLike, content: bytes | str | Callable[[Any], object], *,
                 text: bool = False) -> Path:
    """Write ``path`` whole: ``content`` is the bytes or text, or a function that writes to the
    open file (a text file with ``text=True``, else binary). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    as_text = isinstance(content, str) or (callable(content) and text)
    try:
        opened: IO[Any] = open(tmp, "w", encoding="utf-8") if as_text else open(tmp, "wb")
        with opened as f:
            if callable(content):
                content(f)
            else:
                f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        _discard(tmp, err, path)
        raise
    fsync_dir(path.parent)
    return path


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """The temporary path to have a library write ``path`` through (it writes by name); once the
    block ends without an error the file is fsynced and renamed onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        _discard(tmp, err, path)
        raise
    fsync_dir(path.parent)


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """An empty temporary folder to build ``path`` in; once the block ends without an error its
    files are fsynced and it takes the place of ``path`` (an old ``path`` is moved aside first
    and then removed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    old = path.with_name(f".{path.name}.{os.getpid()}.old{TEMP_SUFFIX}")
    if tmp.exists():  # left by an earlier process of the same id
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
        for p in tmp.rglob("*"):
            if p.is_file():
                _fsync_file(p)
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException as err:
        if old.exists() and not path.exists():
            os.replace(old, path)  # the swap failed half-way: the old folder goes back
        _discard(tmp, err, path)
        raise
    shutil.rmtree(old, ignore_errors=True)
    fsync_dir(path.parent)
