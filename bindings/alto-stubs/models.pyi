"""alto.models: models loaded from Hugging Face checkpoints."""
from typing import Any, Literal, Optional, Sequence, Tuple, Union, overload

import numpy
import torch

TensorLike = Union[torch.Tensor, numpy.ndarray]

class WhisperDecoderState:
    """The decoder's KV cache (Whisper.start makes one)."""
    @property
    def length(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def rows_per_audio(self) -> int: ...
    def select_rows(self, rows: TensorLike) -> None: ...

class Whisper:
    """transformers' WhisperForConditionalGeneration."""
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "Whisper": ...
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def device(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @overload
    def encode(
        self,
        input_features: TensorLike,
        return_intermediates: Literal[False] = ...,
        attention_weights: bool = ...,
    ) -> torch.Tensor: ...
    @overload
    def encode(
        self,
        input_features: TensorLike,
        return_intermediates: Literal[True],
        attention_weights: bool = ...,
    ) -> dict[str, torch.Tensor]:
        """{name: tensor} under the checkpoint's prefixes, incl. "last_hidden_state"."""
    def start(self, encoder_hidden_states: TensorLike, rows_per_audio: int = 1) -> WhisperDecoderState: ...
    def decode(
        self,
        tokens: TensorLike,
        *,
        encoder_hidden_states: Optional[TensorLike] = None,
        state: Optional[WhisperDecoderState] = None,
        return_intermediates: bool = False,
        attention_weights: bool = False,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """int [rows, new] -> logits float32 [rows, new, vocab_size]."""
    def detect_language(self, input_features: TensorLike) -> dict[str, float]: ...
    def generate(
        self,
        input_features: TensorLike,
        *,
        language: Optional[str] = None,
        task: str = "transcribe",
        timestamps: bool = False,
        beam_size: int = 0,
        patience: float = 1.0,
        length_penalty: Optional[float] = None,
        temperature: float = 0.0,
        best_of: int = 5,
        seed: int = 0,
        max_new_tokens: int = 0,
        prompt: Sequence[int] = ...,
        suppress_blank: bool = True,
        suppress_tokens: bool = True,
    ) -> dict[str, Any]:
        """{"tokens", "language", "sum_logprob", "avg_logprob", "no_speech_prob", "temperature"}."""
    def transcribe(
        self,
        wave: TensorLike,
        *,
        tokenizer: str = "",
        language: Optional[str] = None,
        task: str = "transcribe",
        timestamps: bool = False,
        beam_size: int = 0,
        temperatures: Sequence[float] = ...,
        compression_ratio_threshold: Optional[float] = 2.4,
        logprob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        initial_prompt: str = "",
    ) -> dict[str, Any]:
        """{"text", "language", "segments": [{"start", "end", "text", "tokens", ...}]}."""
