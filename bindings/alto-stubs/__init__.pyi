"""alto: audio language model toolkit (C++), from Python. Type stubs (PEP 561)."""
from typing import Iterator, Mapping, Optional, Tuple, Union, overload, Literal

import numpy
import torch

from . import datasets as datasets
from . import features as features
from . import models as models
from . import tokenizers as tokenizers
from .features import FeatureExtractor as FeatureExtractor
from .tokenizers import AudioTokenizer as AudioTokenizer
from .tokenizers import BpeTokenizer as BpeTokenizer

TensorLike = Union[torch.Tensor, numpy.ndarray]

__version__: str

class Error(RuntimeError):
    """Every failure alto detects; the message names the file, field or tensor."""

class InvalidArgument(Error, ValueError):
    """An option or argument has an impossible value (wrong dtype, rank, shape, NaN, ...)."""

class IoError(Error):
    """A file is missing, unreadable, truncated or corrupt."""

class Unsupported(Error):
    """The input is valid but alto cannot handle it."""

class OutOfMemory(Error, MemoryError):
    """Memory for the work asked could not be had; the message says how much was asked for."""

def set_num_threads(threads: int) -> None: ...
def num_threads() -> int: ...
def default_num_threads() -> int: ...
def cached_activation_bytes() -> int:
    """Bytes of freed large-activation memory alto keeps for reuse."""
def activation_cache_limit() -> int:
    """The most freed activation memory alto keeps, in bytes (default 1 GiB)."""
def set_activation_cache_limit(bytes: int) -> None: ...
def release_activation_cache() -> None:
    """Returns the kept activation memory to the operating system."""
def keep_freed_memory() -> bool:
    """Tunes glibc's malloc for tensor work in this process; False where libc is not glibc."""
def as_tensor(x: TensorLike) -> torch.Tensor:
    """The tensor alto sees for x: torch.Tensor as is, numpy.ndarray as a zero-copy view."""

@overload
def load_safetensors(path: str, return_metadata: Literal[False] = ...) -> dict[str, torch.Tensor]: ...
@overload
def load_safetensors(
    path: str, return_metadata: Literal[True]
) -> Tuple[dict[str, torch.Tensor], dict[str, str]]: ...
def save_safetensors(
    path: str, tensors: Mapping[str, TensorLike], metadata: Mapping[str, str] = ...
) -> None: ...

def load_audio(
    path: str,
    sample_rate: Optional[int] = None,
    mono: bool = False,
    offset: float = 0.0,
    duration: Optional[float] = None,
    channel: Optional[int] = None,
    resampler: str = "soxr",
) -> Tuple[torch.Tensor, int]:
    """(float32 [channels, frames], sample_rate)."""

def probe_audio(path: str) -> dict[str, object]: ...
def save_audio(
    path: str,
    wave: TensorLike,
    sample_rate: int,
    format: Optional[str] = None,
    encoding: str = "16",
) -> None: ...
def resample(
    wave: TensorLike, orig_sample_rate: int, new_sample_rate: int, resampler: str = "soxr"
) -> torch.Tensor: ...

class AudioStreamReader(Iterator[torch.Tensor]):
    """Fixed-size chunks [channels, <= chunk_frames] of a file, equal to load_audio's samples."""

    def __init__(
        self,
        path: str,
        chunk_frames: int,
        sample_rate: Optional[int] = None,
        mono: bool = False,
        offset: float = 0.0,
        duration: Optional[float] = None,
        channel: Optional[int] = None,
        resampler: str = "soxr",
    ) -> None: ...
    def __iter__(self) -> "AudioStreamReader": ...
    def __next__(self) -> torch.Tensor: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def channels(self) -> int: ...
    @property
    def source_info(self) -> dict[str, object]: ...
