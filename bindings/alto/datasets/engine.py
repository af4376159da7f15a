"""Runs a job on Dask: one task per shard, shards written by the workers, the index at the end.

The items are cut into shards of `shard_size` consecutive items in input order, so what a shard
holds depends on the inputs and the options alone, never on the number of workers or on timing:
one worker and twenty write the same bytes, a retried shard (its worker died) is rewritten
identically, and a rerun after an interruption keeps every shard whose header names this job.
"""
import hashlib
import json
import logging
import os
import signal
import sys
import time
import traceback

import alto

from . import shards as shard_files
from .items import AUDIO_EXTENSIONS, read_items
from .tasks import JobSpec, make_task

# Tasks built in this worker process, by job: the model loads once per worker, not per item.
_TASKS = {}


def _task(spec: JobSpec):
    key = json.dumps(spec.as_json(), sort_keys=True)
    if key not in _TASKS:
        if not _TASKS:
            # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also turns
            # off glibc's adaptive mmap threshold: every large tensor came from a fresh mmap and
            # a Mimi encode ran 2.4x slower than in a plain process (measured).
            alto.keep_freed_memory()
        _TASKS.clear()  # one job's model at a time
        _TASKS[key] = make_task(spec)
    return _TASKS[key]


def prepare(spec: JobSpec):
    """Runs on a worker: builds the job's task there (raising what a wrong model or option
    raises); returns nothing, the task stays in the worker."""
    _task(spec)


def process_shard(spec: JobSpec, threads: int, out: str, fingerprint: str, index: int,
                  positions_and_items):
    """Runs on a worker: processes the shard's items one by one (a failed item is recorded,
    never raised) and writes the shard. Returns (index, items done, failures, audio seconds)."""
    path = os.path.join(out, shard_files.shard_name(index))
    header = shard_files.read_shard_header(path)
    if header is not None and header["job"] == fingerprint:  # finished before a retry
        return index, len(header["items"]), len(header["failures"]), _seconds(header)
    alto.set_num_threads(threads)
    task = _task(spec)
    done, failures = [], []
    for position, item in positions_and_items:
        try:
            arrays, meta = task(item)
        except Exception as e:  # noqa: BLE001 — an item's failure is data, recorded below
            error = type(e).__name__ if isinstance(e, alto.Error) else f"{type(e).__name__} (internal)"
            failures.append({"id": item.id, "path": item.source, "error": error,
                             "message": str(e).strip() or traceback.format_exc(limit=1)})
            continue
        done.append((position, arrays, meta))
    shard_files.write_shard(path, fingerprint, index, done, failures)
    return index, len(done), len(failures), sum(m["duration"] for _, _, m in done)


def _seconds(header):
    return sum(e["metadata"]["duration"] for e in header["items"])


def _fingerprint(spec, shard_size, items):
    job = {"format": shard_files.FORMAT, "spec": spec.as_json(), "shard_size": shard_size,
           "items": [item.key() for item in items]}
    return hashlib.sha256(json.dumps(job, sort_keys=True).encode()).hexdigest()


def default_workers():
    """One single-threaded worker process per core: alto's operators on one thread each scale
    better across processes than one process's intra-op pool does (bench/results/datasets.md)."""
    return max(1, os.cpu_count() or 1)


class Progress:
    """items, audio hours, hours per hour and ETA on a terminal; silent otherwise."""

    def __init__(self, total_items, shown):
        self.total, self.shown = total_items, shown
        self.items = self.failed = 0
        self.seconds = 0.0
        self.start = time.monotonic()

    def add(self, items, failed, seconds):
        self.items += items + failed
        self.failed += failed
        self.seconds += seconds
        if self.shown:
            elapsed = max(time.monotonic() - self.start, 1e-9)
            rate = self.seconds / elapsed  # audio hours per hour
            eta = elapsed * (self.total - self.items) / max(self.items, 1)
            sys.stderr.write(
                f"\ralto.datasets: {self.items}/{self.total} items ({self.failed} failed), "
                f"{self.seconds / 3600:.3f} h audio, {rate:.0f} h/h, ETA {_clock(eta)}   ")
            sys.stderr.flush()

    def end(self):
        if self.shown and self.items:
            sys.stderr.write("\n")


def _clock(seconds):
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def run(task, inputs, out, *, model="", options=None, device="cpu", dtype="float32",
        shard_size=256, workers=None, threads=None, scheduler=None, overwrite=False,
        progress=None, extensions=None):
    """Processes every item of `inputs` (a folder tree or a manifest) into `out`; returns the
    summary {"items", "done", "failed", "skipped", "shards", "audio_hours", "seconds",
    "hours_per_hour", "out"}. Reruns of an interrupted job finish only what is missing."""
    if not isinstance(shard_size, int) or shard_size < 1:
        raise alto.InvalidArgument(f"shard_size: expected an integer >= 1, got {shard_size!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise alto.InvalidArgument(f"workers: expected an integer >= 1, got {workers!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise alto.InvalidArgument(f"threads: expected an integer >= 1, got {threads!r}")
    spec = JobSpec(task=task, model=os.path.abspath(model) if model else "",
                   options=dict(options or {}), device=device, dtype=dtype)
    items = read_items(inputs, extensions or AUDIO_EXTENSIONS)
    fingerprint = _fingerprint(spec, shard_size, items)
    os.makedirs(out, exist_ok=True)
    claim = _claim(out, spec, fingerprint, overwrite)
    shard_files.remove_temporaries(out)

    groups = [list(enumerate(items))[i:i + shard_size] for i in range(0, len(items), shard_size)]
    pending = []
    skipped = 0
    for index, group in enumerate(groups):
        header = shard_files.read_shard_header(os.path.join(out, shard_files.shard_name(index)))
        if header is not None and header["job"] == fingerprint and header["shard"] == index:
            skipped += len(group)
        else:
            pending.append(index)
    shown = sys.stderr.isatty() if progress is None else progress
    bar = Progress(len(items) - skipped, shown)
    start = time.monotonic()
    if pending:
        _run_on_dask(spec, out, fingerprint, groups, pending, workers, threads, scheduler, bar,
                     claim)
    else:
        claim()
    bar.end()
    shard_files.remove_temporaries(out)  # a killed worker's unfinished write
    summary = _finish(out, spec, fingerprint, groups)
    seconds = time.monotonic() - start
    summary.update(skipped=skipped, seconds=seconds, out=out,
                   hours_per_hour=bar.seconds / seconds if seconds > 0 else 0.0)
    return summary


def _claim(out, spec, fingerprint, overwrite):
    """A folder holding another job is refused unless overwrite; else returns what takes the
    folder for this job (another job's files removed, job.json written), to call once the job
    is known to run."""
    path = os.path.join(out, shard_files.JOB)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("fingerprint") == fingerprint:
            return lambda: None
        if not overwrite:
            raise alto.InvalidArgument(
                f"{out} holds the output of another job ({old.get('spec', {}).get('task')} with "
                "other inputs or options): give a new folder, or overwrite=True (--overwrite)")

    def take():
        for name in os.listdir(out):
            if name.startswith("shard-") or name in (shard_files.INDEX, shard_files.FAILURES):
                os.remove(os.path.join(out, name))
        shard_files.write_text_atomically(path, json.dumps(
            {"format": shard_files.FORMAT, "fingerprint": fingerprint, "spec": spec.as_json()},
            indent=1, sort_keys=True) + "\n")
    return take


def _run_on_dask(spec, out, fingerprint, groups, pending, workers, threads, scheduler, bar,
                 claim):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise alto.Unsupported("alto.datasets runs on Dask: install python3-dask and "
                               "python3-distributed (Debian) or dask[distributed]") from None

    cluster = None
    if scheduler:
        client = Client(scheduler)
        threads = threads or 1
    else:
        workers = workers or min(default_workers(), len(pending))
        threads = threads or max(1, (os.cpu_count() or 1) // workers)
        # One Dask thread per worker: a worker runs one shard at a time, and alto's own
        # intra-op pool gets `threads` cores.
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=_dashboard_address(),
                               silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        if _has_dashboard(client, cluster):
            sys.stderr.write(f"alto.datasets: Dask dashboard at {client.dashboard_link}\n")
        # One worker builds the task first (and keeps it): a wrong model or option is one error
        # for the job, not a failure of every item.
        client.submit(prepare, spec, pure=False).result()
        claim()
        futures = [client.submit(process_shard, spec, threads, out, fingerprint, index,
                                 groups[index], key=f"alto-shard-{fingerprint[:12]}-{index}",
                                 retries=2, pure=False)
                   for index in pending]
        for future in as_completed(futures):
            _, done, failed, seconds = future.result()
            bar.add(done, failed, seconds)
    except KeyboardInterrupt:
        bar.end()
        raise alto.Error(f"interrupted: {out} keeps the finished shards; rerun the same command "
                         "to process only the rest") from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dashboard_address():
    try:
        import bokeh  # noqa: F401 — Dask's dashboard needs it
        return ":0"
    except ImportError:
        return None


def _has_dashboard(client, cluster):
    if cluster is not None and _dashboard_address() is None:
        return False  # the scheduler's HTTP server runs, but without bokeh it has no dashboard
    return bool(client.dashboard_link) and "dashboard" in client.scheduler_info().get("services", {})


def _finish(out, spec, fingerprint, groups):
    """index.json and failures.jsonl from the shards' headers, in input order."""
    ids, failures, names = [], [], []
    seconds = 0.0
    for index in range(len(groups)):
        name = shard_files.shard_name(index)
        header = shard_files.read_shard_header(os.path.join(out, name))
        if header is None or header["job"] != fingerprint:
            raise alto.Error(f"{os.path.join(out, name)}: missing after the run (a worker could "
                             "not write it); rerun to finish")
        names.append(name)
        ids.extend([e["metadata"]["id"], index] for e in header["items"])
        failures.extend(header["failures"])
        seconds += _seconds(header)
    index = {"format": shard_files.FORMAT, "job": {"fingerprint": fingerprint, **spec.as_json(),
                                                   "alto_version": alto.__version__},
             "shards": names, "items": ids}
    shard_files.write_text_atomically(os.path.join(out, shard_files.INDEX),
                                      json.dumps(index, ensure_ascii=False) + "\n")
    shard_files.write_text_atomically(
        os.path.join(out, shard_files.FAILURES),
        "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in failures))
    return {"items": len(ids) + len(failures), "done": len(ids), "failed": len(failures),
            "shards": len(names), "audio_hours": seconds / 3600}


def interrupt_as_keyboard():
    """SIGTERM as Ctrl-C, so a terminated job closes its cluster like an interrupted one."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
