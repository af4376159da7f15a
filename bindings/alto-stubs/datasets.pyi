"""alto.datasets: a corpus to codes, features, transcripts or embeddings on Dask (pure Python)."""
from typing import Any, Iterator, Mapping, Optional, Sequence

Summary = dict[str, Any]
"""{"items", "done", "failed", "skipped", "shards", "audio_hours", "seconds", "hours_per_hour", "out"}"""

def run(
    task: str, inputs: str, out: str, *, model: str = "", options: Optional[Mapping[str, Any]] = None,
    device: str = "cpu", dtype: str = "float32", shard_size: int = 256,
    workers: Optional[int] = None, threads: Optional[int] = None, scheduler: Optional[str] = None,
    overwrite: bool = False, progress: Optional[bool] = None,
    extensions: Optional[Sequence[str]] = None,
) -> Summary: ...
def encode(
    inputs: str, out: str, *, model: str, bandwidth: float = 0.0, num_quantizers: int = 0, **job: Any
) -> Summary: ...
def features(
    inputs: str, out: str, *, extractor: str = "", config: str = "",
    extractor_options: Optional[Mapping[str, Any]] = None, resample: bool = False,
    waveform_scale: float = 1.0, no_pad: bool = False, **job: Any,
) -> Summary: ...
def transcribe(
    inputs: str, out: str, *, model: str, tokenizer: Optional[str] = None,
    language: Optional[str] = None, task: Optional[str] = None, timestamps: Optional[bool] = None,
    beam_size: Optional[int] = None, temperatures: Optional[Sequence[float]] = None,
    max_new_tokens: Optional[int] = None, **job: Any,
) -> Summary: ...
def embed(inputs: str, out: str, *, model: str, **job: Any) -> Summary: ...

class Dataset(Mapping[str, dict[str, Any]]):
    """{item id: {"<array>": numpy.ndarray, ..., "metadata": dict}} in input order."""
    out: str
    job: dict[str, Any]
    shards: list[str]
    failures: list[dict[str, Any]]
    def __init__(self, out: str) -> None: ...
    def __getitem__(self, item_id: str) -> dict[str, Any]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def metadata(self, item_id: str) -> dict[str, Any]: ...

def load(out: str) -> Dataset: ...
