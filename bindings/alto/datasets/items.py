"""A job's inputs as items: every audio file of a folder tree, or the rows of a manifest."""
import csv
import dataclasses
import json
import math
import os
from typing import Any, Optional

import alto

# What a folder tree's walk picks up: the containers FFmpeg and libsndfile read. A file with
# one of these suffixes that does not decode is a failure of its item, not skipped.
AUDIO_EXTENSIONS = (
    ".aac", ".ac3", ".aif", ".aifc", ".aiff", ".amr", ".ape", ".au", ".caf", ".flac", ".m4a",
    ".mka", ".mkv", ".mp2", ".mp3", ".mp4", ".oga", ".ogg", ".opus", ".spx", ".w64", ".wav",
    ".webm", ".wma", ".wv")

# Manifest columns with a meaning; every other column is carried through to the metadata.
# NeMo's manifests name the file audio_filepath.
PATH, ID, START, END = "path", "id", "start", "end"
PATH_COLUMNS = (PATH, "audio_filepath")


@dataclasses.dataclass(frozen=True)
class Item:
    """One unit of work: a file, or the segment [start, end) seconds of one."""

    id: str
    path: str  # the file read (absolute)
    source: str  # the path as the manifest or the folder walk gave it
    start: Optional[float] = None
    end: Optional[float] = None
    fields: dict = dataclasses.field(default_factory=dict)  # text and any extra columns

    def key(self):
        """What identifies the item's work (its part of the job's fingerprint)."""
        return [self.id, self.path, self.start, self.end, self.fields]


def read_items(source: str, extensions=AUDIO_EXTENSIONS) -> list:
    """The items of a folder tree (sorted walk; id = the path below the folder) or of a manifest
    (.jsonl / .json lines or .csv; relative paths are below the manifest's folder)."""
    if os.path.isdir(source):
        items = _folder_items(source, tuple(e.lower() for e in extensions))
        if not items:
            raise alto.InvalidArgument(
                f"{source}: no audio files below it (looked for {', '.join(extensions)})")
    elif os.path.isfile(source):
        lower = source.lower()
        if lower.endswith(".csv") or lower.endswith(".tsv"):
            rows = _csv_rows(source, "\t" if lower.endswith(".tsv") else ",")
        elif lower.endswith(".jsonl") or lower.endswith(".json"):
            rows = _json_rows(source)
        else:
            raise alto.InvalidArgument(
                f"{source}: expected a folder of audio files or a manifest (.jsonl, .json, .csv, "
                ".tsv)")
        items = [_manifest_item(source, line, row) for line, row in rows]
        if not items:
            raise alto.InvalidArgument(f"{source}: the manifest lists no items")
    else:
        raise alto.IoError(f"{source}: no such folder or manifest")
    _check_unique(source, items)
    return items


def _folder_items(folder, extensions):
    items = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.lower().endswith(extensions) and not name.startswith("."):
                path = os.path.join(root, name)
                relative = os.path.relpath(path, folder).replace(os.sep, "/")
                items.append(Item(id=relative, path=os.path.abspath(path), source=relative))
    return items


def _json_rows(path):
    with open(path, encoding="utf-8") as f:
        for line, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise alto.InvalidArgument(f"{path}:{line}: not JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise alto.InvalidArgument(f"{path}:{line}: expected a JSON object per line")
            yield line, row


def _csv_rows(path, delimiter):
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        if not reader.fieldnames or not set(PATH_COLUMNS) & set(reader.fieldnames):
            raise alto.InvalidArgument(
                f"{path}: the header row has no '{PATH}' column (got {reader.fieldnames})")
        for row in reader:
            if None in row:
                raise alto.InvalidArgument(
                    f"{path}:{reader.line_num}: more values than the header has columns")
            yield reader.line_num, {k: v for k, v in row.items() if v not in (None, "")}


def _seconds(where, name, value):
    if value is None or value == "":
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise alto.InvalidArgument(f"{where}: '{name}' must be seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise alto.InvalidArgument(f"{where}: '{name}' must be >= 0 seconds, got {value!r}")
    return seconds


def _manifest_item(manifest, line, row):
    where = f"{manifest}:{line}"
    path = next((row[c] for c in PATH_COLUMNS if c in row), None)
    if not isinstance(path, str) or not path:
        raise alto.InvalidArgument(f"{where}: no '{PATH}' (a file name)")
    start = _seconds(where, START, row.get(START))
    end = _seconds(where, END, row.get(END))
    if end is not None and end <= (start or 0.0):
        raise alto.InvalidArgument(f"{where}: '{END}' ({end}) must be after '{START}' ({start or 0})")
    item_id = row.get(ID)
    if item_id is None:
        item_id = path if start is None and end is None else f"{path}@{start or 0:g}-{end or ''}"
    fields = {k: v for k, v in row.items() if k not in (*PATH_COLUMNS, ID, START, END)}
    absolute = path if os.path.isabs(path) else os.path.join(
        os.path.dirname(os.path.abspath(manifest)), path)
    return Item(id=str(item_id), path=os.path.normpath(absolute), source=path, start=start, end=end,
                fields=fields)


def _check_unique(source, items):
    seen, duplicates = set(), []
    for item in items:
        if item.id in seen:
            duplicates.append(item.id)
        seen.add(item.id)
    if duplicates:
        shown = ", ".join(repr(d) for d in duplicates[:5])
        raise alto.InvalidArgument(
            f"{source}: {len(duplicates)} item ids occur more than once ({shown}); give each "
            "row its own 'id'")


def load_item_audio(item: Item, sample_rate: Optional[int], mono: bool) -> Any:
    """(samples float32 [channels, n], rate) of the item, only its segment decoded."""
    offset = item.start or 0.0
    duration = None if item.end is None else item.end - offset
    wave, rate = alto.load_audio(item.path, sample_rate=sample_rate, mono=mono, offset=offset,
                                 duration=duration)
    if wave.shape[-1] == 0:
        raise alto.InvalidArgument(f"{item.path}: no samples"
                                   + ("" if item.start is None else f" in [{item.start}, {item.end})"))
    return wave, rate
