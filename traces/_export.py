"""A run as a Hugging Face dataset folder (``gridbench export``, docs/export.md).

Layout of an export::

    README.md                                the dataset card: YAML front matter the Hub reads, then the run,
                                             the schema of each table, the mazes' licence and provenance, how to load it
    data/episodes-<i>-of-<n>.parquet         the episodes table in shards (schema ``EpisodeRecord.schema()``)
    data/steps-<i>-of-<n>.parquet            the steps table in shards (schema ``StepRecord.schema()``)
    manifest.json                            the run's manifest; its ``mazes`` hold every maze the episodes ran on

Each shard holds at most about ``SHARD_BYTES`` of rows (as Arrow holds them in memory; less on
disk, compressed). The folder reads back as the run it was made from: ``trace_dataset`` reads the
shards when a folder has no table folders of its own (``traces._tables.export_shards``), and the
manifest is where every run has it, so ``gridbench report``, ``replay`` and the viewer take an
export as they take a run. It is built in a temporary sibling and renamed into place whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from env.errors import BadInput
from env.files import atomic_folder
from env.sets import SEALED
from traces._manifest import MANIFEST, read_manifest
from traces._names import EXPORT_DATA, shard_name
from traces._records import ERROR, EpisodeRecord, StepRecord, markdown_table
from traces._schema import EPISODES_DIR, SCHEMAS, STEPS_DIR
from traces._store import RunStore, is_uri, open_store
from traces._tables import is_export, read_table, trace_dataset

CARD = "README.md"
SHARD_BYTES = 256 * 1024 * 1024  # rows per shard, as Arrow holds them: a few tens of MB of Parquet
BATCH_ROWS = 32_768
# gridbench's own licence (pyproject.toml's ``license``): the licence of the mazes it makes (generated, hand-made)
GRIDBENCH_LICENCE = "Apache-2.0"
# licences the Hub names by an id of its own (its ``license:`` field); any other is ``other``
HUB_LICENCES = {
    "apache-2.0": "apache-2.0", "mit": "mit", "bsd-2-clause": "bsd-2-clause", "bsd-3-clause": "bsd-3-clause",
    "cc0-1.0": "cc0-1.0", "cc-by-4.0": "cc-by-4.0", "cc-by-sa-4.0": "cc-by-sa-4.0", "gpl-3.0": "gpl-3.0",
    "odc-by": "odc-by", "unlicense": "unlicense",
}
UNKNOWN = "unknown"
TAGS = ("gridbench", "gridworld", "maze", "vision-language-models", "agents", "evaluation", "traces")

Progress = Callable[[int, int], None]  # (rows written, rows in all)


@dataclass(frozen=True)
class ExportResult:
    """What ``export_run`` wrote."""

    folder: Path
    shards: dict[str, list[str]]  # table -> its shards' paths inside the folder (``data/...``)
    rows: dict[str, int]  # table -> rows written
    licence: str  # the card's ``license:`` (a Hub id, or ``other`` when the mazes' licences are mixed)
    licences: dict[str, int]  # each maze licence -> how many of the run's mazes carry it


def maze_licence(content: dict[str, Any] | None) -> str:
    """A maze's licence: its ``meta.provenance.licence``; gridbench's own for a maze it made
    (generated or hand-made); ``unknown`` for one imported without provenance or not recorded."""
    if content is None:
        return UNKNOWN
    meta = content.get("meta") or {}
    licence = (meta.get("provenance") or {}).get("licence")
    if licence:
        return str(licence)
    return UNKNOWN if str(meta.get("source") or "").startswith("imported") else GRIDBENCH_LICENCE


def hub_licence(licence: str) -> str | None:
    """The Hub's id for a licence as mazes write it (``MIT, Copyright (c) ...`` is ``mit``)."""
    return HUB_LICENCES.get(licence.split(",")[0].strip().lower())


def card_licence(licences: dict[str, int]) -> str:
    """The card's ``license:``: the one licence of every maze, else ``other`` (the card lists them)."""
    ids = {hub_licence(name) for name in licences}
    only = ids.pop() if len(ids) == 1 else None
    return only or "other"


def maze_set_checksum(checksums: list[str]) -> str:
    """The checksum of the set of mazes a run played: SHA-256 over their sorted checksums, one a line."""
    return hashlib.sha256("".join(f"{c}\n" for c in sorted(set(checksums))).encode("ascii")).hexdigest()


def _check_out(out: str | os.PathLike, run: RunStore, force: bool) -> Path:
    if is_uri(out):
        raise BadInput("--out", "", f"{out}: an export is written to a local folder (upload it with the Hub's own "
                                    "client: `huggingface-cli upload`)")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise BadInput("--out", "", f"{path}: exists and is not a folder")
    if run.local:
        source = Path(run.location).resolve()
        if path.resolve() == source or path.resolve() in source.parents:
            raise BadInput("--out", "", f"{path}: is the run's folder or holds it")
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise BadInput("--out", "", f"{path}: exists and is not empty (give --force to replace an earlier export)")
        if not ((path / CARD).is_file() and is_export(path)):
            raise BadInput("--out", "", f"{path}: is not a gridbench export: not replaced, even with --force")
    return path


def _recorded_mazes(store: RunStore, manifest: dict[str, Any], episodes: pa.Table) -> dict[str, dict[str, Any]]:
    """The manifest's mazes, and those of the episodes it lacks that a shipped set holds (same
    checksum): the export carries every maze its episodes ran on that can be found."""
    mazes = dict(manifest.get("mazes") or {})
    pairs = set(zip(episodes.column("maze_id").to_pylist(), episodes.column("maze_checksum").to_pylist(), strict=True))
    missing = [(mid, chk) for mid, chk in sorted(pairs, key=str) if chk and chk not in mazes]
    if missing:
        from env.sets import resolve_maze

        for mid, chk in missing:
            try:
                maze = resolve_maze(mid)
            except BadInput:
                continue
            if maze.checksum == chk:
                mazes[chk] = maze.to_dict()
    return mazes


def _write_shards(store: RunStore, table: str, data_dir: Path, shard_bytes: int,
                  advance: Callable[[int], None]) -> tuple[list[str], int]:
    """Stream ``table`` into shards of at most ``shard_bytes`` each (at least one, empty for an
    empty table); returns their paths in the folder and the rows written."""
    schema = SCHEMAS[table]
    scanner = trace_dataset(store, table).scanner(batch_size=BATCH_ROWS, cache_metadata=False)
    parts: list[Path] = []
    writer: pq.ParquetWriter | None = None
    held, rows = 0, 0
    run_name = pa.scalar(store.name, pa.string())
    for batch in scanner.to_batches():
        if not batch.num_rows:
            continue
        # a blank run column reads as the run folder's name (analysis.load): the export's folder has another
        i = schema.get_field_index("run")
        runs = batch.column(i)
        blank = pc.or_kleene(pc.is_null(runs), pc.equal(runs, ""))
        if pc.any(blank).as_py():
            batch = batch.set_column(i, "run", pc.if_else(blank, run_name, runs))
        if writer is None or held >= shard_bytes:
            if writer is not None:
                writer.close()
            parts.append(data_dir / f".{table}-{len(parts):05d}.part")
            writer = pq.ParquetWriter(parts[-1], schema, compression="zstd")
            held = 0
        writer.write_batch(batch)
        held += batch.nbytes
        rows += batch.num_rows
        advance(batch.num_rows)
    if writer is not None:
        writer.close()
    else:
        parts.append(data_dir / f".{table}-00000.part")
        pq.write_table(schema.empty_table(), parts[-1], compression="zstd")
    names = []
    for i, part in enumerate(parts):
        name = shard_name(table, i, len(parts))
        part.rename(data_dir / name)
        names.append(f"{EXPORT_DATA}/{name}")
    return names, rows


def export_run(run: str | os.PathLike | RunStore, out: str | os.PathLike, *, force: bool = False,
               unsealed: bool = False, shard_bytes: int = SHARD_BYTES,
               progress: Progress | None = None) -> ExportResult:
    """Write ``run`` (a folder or an ``s3://``/``gs://`` URI) as a Hugging Face dataset folder at
    ``out`` (local). ``BadInput`` for a ``run`` that is not a run, an ``out`` that exists and is not
    empty (unless ``force`` and it is an earlier export), a run on a sealed set (unless
    ``unsealed``: its traces hold the set's mazes); nothing is written then."""
    store = open_store(run, "RUN")
    if not store.is_dir():
        raise BadInput(store.display(), "", "no such run folder")
    if not (store.is_dir(EPISODES_DIR) or is_export(store)):
        raise BadInput(store.display(), EPISODES_DIR, "not a gridbench run (it has no episodes/)")
    manifest = read_manifest(store)
    if manifest is None:
        raise BadInput(store.display(MANIFEST), "", "missing: an export carries the run's manifest (its sweep, its mazes)")
    sealed = manifest.get(SEALED)
    if sealed and not unsealed:
        raise BadInput(store.display(MANIFEST), SEALED,
                       f"the run is on the sealed set {sealed.get('set')!r}: an export would publish its mazes; "
                       "give --unsealed once the set is revealed (gridbench pool unseal)")
    folder = _check_out(out, store, force)
    try:  # every file's footer is read here: a damaged one is bad input, before anything is written
        episodes = read_table(store, EPISODES_DIR)
        total = episodes.num_rows + trace_dataset(store, STEPS_DIR).count_rows()
    except (pa.ArrowException, OSError) as err:
        raise BadInput(store.display(), "", f"unreadable trace files ({str(err).splitlines()[0][:200]})") from None
    if not episodes.num_rows:
        raise BadInput(store.display(), EPISODES_DIR, "no finished episodes in this run: nothing to export")
    mazes = _recorded_mazes(store, manifest, episodes)
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    shards: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    with atomic_folder(folder) as tmp:
        (tmp / EXPORT_DATA).mkdir()
        for table in (EPISODES_DIR, STEPS_DIR):
            shards[table], rows[table] = _write_shards(store, table, tmp / EXPORT_DATA, shard_bytes, advance)
        (tmp / MANIFEST).write_text(json.dumps({**manifest, "mazes": mazes}, indent=2, default=str) + "\n")
        card, licence, licences = dataset_card(store, manifest, mazes, episodes, shards, rows)
        (tmp / CARD).write_text(card)
    return ExportResult(folder, shards, rows, licence, licences)


# ---- the card -----------------------------------------------------------------------------------------

def front_matter(run_name: str, licence: str) -> dict[str, Any]:
    """What the Hub reads of the card: the two tables as configs (episodes the default), the licence, tags."""
    return {
        "configs": [{"config_name": table, "data_files": [{"split": "train", "path": f"{EXPORT_DATA}/{table}-*.parquet"}],
                     **({"default": True} if table == EPISODES_DIR else {})}
                    for table in (EPISODES_DIR, STEPS_DIR)],
        "license": licence,
        "pretty_name": f"gridbench run {run_name}",
        "tags": list(TAGS),
    }


def _when(value: Any) -> str:
    if value is None or value != value:  # null, NaT
        return "not recorded"
    return value.astimezone(UTC).isoformat(timespec="seconds") if isinstance(value, datetime) else str(value)


# options whose values name places on the machine that ran it (a home folder, a cluster's address):
# the card is published, so it shows the option and not its value (the manifest keeps the command)
_PLACES = ("--out", "--address")


def _public(command: list[Any]) -> list[str]:
    words = [str(w) for w in command]
    return [f"<{words[i - 1].lstrip('-')}>" if i and words[i - 1] in _PLACES else w for i, w in enumerate(words)]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _maze_rows(mazes: dict[str, dict[str, Any]], played: dict[str, str]) -> list[str]:
    """One line per maze the episodes ran on: id, checksum, licence, where it came from."""
    lines = ["| maze | checksum | licence | provenance |", "|---|---|---|---|"]
    for checksum, mid in sorted(played.items(), key=lambda kv: (kv[1], kv[0])):
        content = mazes.get(checksum)
        meta = (content or {}).get("meta") or {}
        prov = meta.get("provenance") or {}
        if prov:
            where = " ".join(str(prov[k]) for k in ("repository", "path") if prov.get(k))
            where += f" @ {str(prov['commit'])[:12]}" if prov.get("commit") else ""
        elif content is None:
            where = "not recorded in the run"
        else:
            where = f"gridbench ({meta.get('source') or 'hand-made'})"
        lines.append(f"| `{_cell(mid)}` | `{checksum[:12]}` | {_cell(maze_licence(content))} | {_cell(where)} |")
    return lines


def dataset_card(store: RunStore, manifest: dict[str, Any], mazes: dict[str, dict[str, Any]], episodes: pa.Table,
                 shards: dict[str, list[str]], rows: dict[str, int]) -> tuple[str, str, dict[str, int]]:
    """The card's text, its ``license:`` and the count of mazes under each licence."""
    import yaml

    eps = episodes.to_pandas()
    played = dict(zip(eps["maze_checksum"].fillna(""), eps["maze_id"], strict=True))
    licences: dict[str, int] = {}
    for checksum in played:
        name = maze_licence(mazes.get(checksum))
        licences[name] = licences.get(name, 0) + 1
    licence = card_licence(licences)
    run_name = str(manifest.get("run") or store.name)
    sweep = manifest.get("sweep") or {}
    git = manifest.get("git") or {}
    ok = eps[eps["termination"] != ERROR]
    models = eps.drop_duplicates(["model_name", "model"])[["model_name", "model"]].itertuples(index=False)
    tokens = {k: int(eps[k].fillna(0).sum()) for k in ("tokens_in", "tokens_out", "tokens_reasoning")}
    the_run = [
        ("run", f"`{run_name}`"),
        ("sweep", (f"`{sweep['name']}`" if sweep.get("name") else "not recorded")
         + (f" ({sweep['source']})" if sweep.get("source") else "")),
        ("models", ", ".join(f"`{n}` ({m})" for n, m in models)),
        ("conditions", ", ".join(f"`{c}`" for c in sorted(eps["condition"].fillna("").unique()))),
        ("protocol hashes", ", ".join(f"`{h}`" for h in sorted(eps["protocol_hash"].fillna("").unique()))),
        ("mazes", f"{len(played)}, maze set checksum `{maze_set_checksum(list(played))}` "
                  "(SHA-256 of their sorted checksums, one a line)"),
        ("episodes", f"{rows[EPISODES_DIR]} ({int(ok['solved'].fillna(False).sum())} solved, "
                     f"{len(eps) - len(ok)} ended in error)"),
        ("steps", str(rows[STEPS_DIR])),
        ("gridbench version", ", ".join(sorted(eps["gridbench_version"].fillna("").unique()))
         + f"; env version {', '.join(sorted(eps['env_version'].fillna('').unique()))}"
         + (f"; commit `{git['commit']}`" + (" (with uncommitted changes)" if git.get("dirty") else "")
            if git.get("commit") else "")),
        ("dates", f"{_when(eps['started_at'].min())} to {_when(eps['finished_at'].max())}"
                  + (f" (run created {manifest['created_at']}, updated {manifest.get('updated_at')})"
                     if manifest.get("created_at") else "")),
        ("tokens", f"{tokens['tokens_in']:,} in, {tokens['tokens_out']:,} out "
                   f"(of which {tokens['tokens_reasoning']:,} reasoning)"),
        ("dollars", f"${float(eps['cost_usd'].fillna(0).sum()):,.2f}"),
        ("exported", datetime.now(UTC).isoformat(timespec="seconds")),
    ]
    invocations = [f"- {_cell(inv.get('at', '?'))}: `{_cell(' '.join(_public(inv.get('command') or [])))}`"
                   for inv in manifest.get("invocations") or []]
    if licence == "other":
        stated = ("The mazes carry more than one licence (or one the Hub has no id for), so `license` is "
                  "`other`. Each licence covers the episodes and steps played on its mazes (every maze's below):")
    else:
        stated = f"Every maze of this run is under {next(iter(licences))} (`license: {licence}`)."
    files = [f"- `{p}`" for table in (EPISODES_DIR, STEPS_DIR) for p in shards[table]]
    body = [
        f"# gridbench run `{run_name}`", "",
        "The traces of one gridbench run: vision-language models (and built-in reference "
        "agents) played gridworld mazes, one action per step. `episodes` has one row per episode, `steps` one row "
        "per step; an episode whose `termination` is `error` is an infrastructure failure, never a model outcome.",
        "", "## The run", "", "| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in the_run), "",
        "## Files", "", *files,
        f"- `{MANIFEST}`: the run's manifest (the resolved sweep, git, packages, invocations); its `mazes` holds "
        "every maze the episodes ran on, by checksum, so the report and replay need no maze files", "",
        "## Loading", "",
        "```python", "from datasets import load_dataset", "",
        'episodes = load_dataset("parquet", data_files="data/episodes-*.parquet", split="train")',
        'steps = load_dataset("parquet", data_files="data/steps-*.parquet", split="train")',
        '# from the Hub: load_dataset("<owner>/<name>", "steps", split="train")', "```", "",
        "```python", "import glob", "", "import pandas as pd", "",
        'episodes = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob("data/episodes-*.parquet"))], '
        'ignore_index=True)',
        'steps = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob("data/steps-*.parquet"))], ignore_index=True)',
        "```", "",
        "With gridbench installed, the folder reads as the run itself: `gridbench report FOLDER`, "
        "`gridbench replay FOLDER EPISODE_ID --verify`, `traces.read_run(FOLDER)`.", "",
        "## Schema", "",
        "Generated from the records' own column declarations (gridbench's `traces/_records.py`). "
        "Times are UTC; read columns by name.", "",
        "### episodes", "", markdown_table(EpisodeRecord), "### steps", "", markdown_table(StepRecord),
        "## Mazes: licence and provenance", "", stated, "",
        "| licence | mazes |", "|---|---|", *(f"| {_cell(k)} | {v} |" for k, v in sorted(licences.items())), "",
        f"gridbench's own mazes (generated, hand-made) are under gridbench's licence, {GRIDBENCH_LICENCE}; "
        "imported mazes carry their source's (`meta.provenance` of each maze in the manifest).", "",
        *_maze_rows(mazes, played), "",
        "## Provenance", "",
        f"Exported by `gridbench export` from the run `{run_name}`"
        + (f", written by gridbench at commit `{git['commit']}`" if git.get("commit") else "")
        + (". The commands that wrote it:" if invocations else "; its manifest records no command that wrote it."),
        "", *invocations,
    ]
    head = yaml.safe_dump(front_matter(run_name, licence), sort_keys=False, allow_unicode=True)
    return f"---\n{head}---\n\n" + "\n".join(body).rstrip() + "\n", licence, licences

