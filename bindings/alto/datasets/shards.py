"""The output folder: safetensors shards, the index, failures.jsonl, and reading it all back.

A shard is one safetensors file holding a consecutive run of the job's items: tensor
"<position>/<name>" for each array of the item at that position in the job, and in the header's
metadata the shard's items (their metadata and tensor names) and its failures. Safetensors
rather than WebDataset tar: a reader maps a shard and takes one item's arrays without reading
or unpacking the rest (random access by id, zero-copy, what training loaders shuffle with); the
format is what checkpoints and `alto encode` already use, readable by the safetensors library
in any language; and the header makes each shard self-describing, so a rerun can trust a
finished shard by its header alone.

Layout of OUT:
    job.json                    the job (task, model, options, items' fingerprint)
    shard-000000.safetensors    items 0 .. shard_size-1, and so on
    index.json                  every finished item's id -> shard, in input order
    failures.jsonl              every item that failed: id, path, error type and alto's message
"""
import collections.abc
import json
import os
import uuid

import alto

FORMAT = "alto.datasets/1"
JOB, INDEX, FAILURES = "job.json", "index.json", "failures.jsonl"


def shard_name(index: int) -> str:
    return f"shard-{index:06d}.safetensors"


def write_atomically(path, write):
    """write(temporary path), fsync, then rename over `path`: readers see all or nothing."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text_atomically(path, text):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    write_atomically(path, write)


def remove_temporaries(out):
    for name in os.listdir(out):
        if name.startswith(".") and ".tmp-" in name:
            os.remove(os.path.join(out, name))


def write_shard(path, fingerprint, index, done, failures):
    """done: [(position, {name: tensor}, metadata)]; failures: [{id, path, error, message}]."""
    tensors, items = {}, []
    for position, arrays, meta in done:
        names = {}
        for name, tensor in arrays.items():
            names[name] = f"{position}/{name}"
            tensors[names[name]] = tensor
        items.append({"metadata": meta, "tensors": names})
    metadata = {"format": FORMAT, "job": fingerprint, "shard": str(index),
                "items": json.dumps(items, ensure_ascii=False),
                "failures": json.dumps(failures, ensure_ascii=False)}
    write_atomically(path, lambda tmp: alto.save_safetensors(tmp, tensors, metadata))


def read_shard_header(path):
    """The shard's metadata ({"job", "shard", "items", "failures"} decoded), or None when the
    file is missing or not a finished shard of this format."""
    if not os.path.exists(path):
        return None
    try:
        _, metadata = alto.load_safetensors(path, return_metadata=True)
        if metadata.get("format") != FORMAT:
            return None
        return {"job": metadata["job"], "shard": int(metadata["shard"]),
                "items": json.loads(metadata["items"]),
                "failures": json.loads(metadata["failures"])}
    except (alto.Error, KeyError, ValueError):
        return None


class Dataset(collections.abc.Mapping):
    """A finished job's output as {item id: {"<array>": numpy.ndarray, ..., "metadata": dict}},
    iterated in input order. Shards are memory-mapped; the last one read stays open, so reading
    in order touches each shard once.

        ds = alto.datasets.load("out")
        for item_id, item in ds.items():
            item["codes"], item["metadata"]["duration"]
        ds.failures   # [{"id", "path", "error", "message"}]
    """

    def __init__(self, out: str):
        self.out = out
        index_path = os.path.join(out, INDEX)
        if not os.path.isfile(index_path):
            raise alto.IoError(f"{out}: no {INDEX} (not an alto.datasets output, or the job has "
                               "not finished: rerun it to complete)")
        with open(index_path, encoding="utf-8") as f:
            index = json.load(f)
        if index.get("format") != FORMAT:
            raise alto.InvalidArgument(f"{index_path}: format {index.get('format')!r}, expected "
                                       f"{FORMAT!r}")
        self.job = index["job"]
        self.shards = index["shards"]
        self._shard_of = {item_id: shard for item_id, shard in index["items"]}
        self._order = [item_id for item_id, _ in index["items"]]
        self.failures = []
        failures_path = os.path.join(out, FAILURES)
        if os.path.exists(failures_path):
            with open(failures_path, encoding="utf-8") as f:
                self.failures = [json.loads(line) for line in f if line.strip()]
        self._open = None  # (shard, tensors, {id: item entry})

    def __len__(self):
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def __contains__(self, item_id):
        return item_id in self._shard_of

    def __getitem__(self, item_id):
        shard = self._shard_of[item_id]
        if self._open is None or self._open[0] != shard:
            path = os.path.join(self.out, self.shards[shard])
            tensors, metadata = alto.load_safetensors(path, return_metadata=True)
            entries = {e["metadata"]["id"]: e for e in json.loads(metadata["items"])}
            self._open = (shard, tensors, entries)
        _, tensors, entries = self._open
        entry = entries[item_id]
        item = {name: tensors[key].numpy() for name, key in entry["tensors"].items()}
        item["metadata"] = entry["metadata"]
        return item

    def metadata(self, item_id):
        """The item's metadata alone."""
        return self[item_id]["metadata"]

    def __repr__(self):
        return (f"alto.datasets.Dataset({self.out!r}: {len(self)} items in {len(self.shards)} "
                f"shards, {len(self.failures)} failed, task {self.job.get('task')!r})")


def load(out: str) -> Dataset:
    """Reads a finished job's output folder back (see Dataset)."""
    return Dataset(out)
