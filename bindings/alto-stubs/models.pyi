"""alto.models: models loaded from Hugging Face checkpoints."""
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy
import torch

from .tokenizers import TextTokenizer

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
    @property
    def precision(self) -> str: ...
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
        clamp_segments: bool = True,
    ) -> dict[str, Any]:
        """{"text", "language", "segments": [{"start", "end", "text", "tokens", ...}]}."""

class AudioEncoder:
    """Any registered audio encoder (Whisper's), loaded by config.json's model_type."""
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "AudioEncoder": ...
    @staticmethod
    def model_types() -> dict[str, str]: ...
    @property
    def sampling_rate(self) -> int: ...
    @property
    def max_seconds(self) -> float: ...
    def embed(self, wave: TensorLike) -> dict[str, torch.Tensor]:
        """{"input_features", "last_hidden_state" [1, frames, hidden]}, equal to `alto embed`."""

Conversation = Sequence[dict[str, Any]]
"""[{"role", "content": str | [{"type": "text", "text"} | {"type": "audio", "audio" | "path"}]}]"""

class TextDecoderState:
    """The KV caches of a batch of rows (TextDecoder.start makes one)."""
    @property
    def length(self) -> int: ...
    @property
    def capacity(self) -> int: ...

class TextDecoder:
    """transformers' LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM."""
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "TextDecoder": ...
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def device(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def precision(self) -> str: ...
    def embed(self, input_ids: TensorLike) -> torch.Tensor: ...
    def start(self, batch: int, capacity: int) -> TextDecoderState: ...
    def forward(
        self,
        inputs_embeds: TensorLike,
        attention_mask: Optional[TensorLike] = None,
        *,
        state: Optional[TextDecoderState] = None,
        return_intermediates: bool = False,
        attention_weights: bool = False,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """[batch, T, hidden] -> final-norm hidden states [batch, T, hidden]."""
    def logits(self, hidden: TensorLike) -> torch.Tensor: ...
    def generate(
        self,
        input_ids: Optional[TensorLike] = None,
        *,
        inputs_embeds: Optional[TensorLike] = None,
        attention_mask: Optional[TensorLike] = None,
        return_logits: bool = False,
        on_token: Optional[Callable[[int, int], Optional[bool]]] = None,
        **generation_config: Any,
    ) -> dict[str, Any]:
        """{"generated_ids", "logits" (with return_logits), "prefill_seconds", "token_seconds"}."""

class AudioLanguageModel:
    """Qwen2-Audio / Voxtral (transformers' *ForConditionalGeneration) from a Hub folder."""
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "AudioLanguageModel": ...
    @staticmethod
    def model_types() -> dict[str, str]: ...
    @property
    def model_type(self) -> str: ...
    @property
    def sampling_rate(self) -> int: ...
    @property
    def audio_token_id(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def generation_config(self) -> dict[str, Any]: ...
    @property
    def text_decoder(self) -> TextDecoder: ...
    @property
    def tokenizer(self) -> TextTokenizer: ...
    def process(self, conversation: Conversation, add_generation_prompt: bool = True) -> dict[str, Any]:
        """{"prompt", "input_ids", "attention_mask", "input_features", "feature_attention_mask",
        "audio_tokens"}."""
    def transcription_inputs(self, wave: TensorLike, language: Optional[str] = None) -> dict[str, Any]: ...
    def embed(
        self, inputs: Mapping[str, Any], return_intermediates: bool = False, attention_weights: bool = False
    ) -> dict[str, Any]:
        """{"input_ids", "audio_positions", "audio_embeds", "inputs_embeds"[, "intermediates"]}."""
    def logits(
        self, inputs: Mapping[str, Any], return_intermediates: bool = False, attention_weights: bool = False
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, dict[str, torch.Tensor]]]: ...
    def generate(
        self,
        inputs: Mapping[str, Any],
        *,
        return_logits: bool = False,
        on_token: Optional[Callable[[int, int], Optional[bool]]] = None,
        **generation_config: Any,
    ) -> dict[str, Any]:
        """{"generated_ids", "text", "logits" (with return_logits), "prefill_seconds",
        "token_seconds"}."""

class KyutaiSpeechToTextState:
    @property
    def positions(self) -> torch.Tensor: ...

class KyutaiSpeechToText:
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "KyutaiSpeechToText": ...
    @property
    def sampling_rate(self) -> int: ...
    @property
    def frame_rate(self) -> float: ...
    @property
    def num_codebooks(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def tokenizer(self) -> TextTokenizer: ...
    def process(self, wave: TensorLike) -> dict[str, torch.Tensor]: ...
    def encode(self, input_values: TensorLike) -> torch.Tensor: ...
    def embed(self, input_ids: TensorLike) -> torch.Tensor: ...
    def start(self, batch: int = 1) -> KyutaiSpeechToTextState: ...
    def forward(
        self,
        inputs_embeds: TensorLike,
        state: KyutaiSpeechToTextState,
        advancing: Optional[TensorLike] = None,
        intermediates: bool = False,
    ) -> Union[torch.Tensor, tuple[torch.Tensor, dict[str, torch.Tensor]]]: ...
    def logits(self, hidden: TensorLike) -> torch.Tensor: ...
    def transcribe(self, wave: TensorLike) -> dict[str, Any]: ...
    def transcribe_codes(self, codes: TensorLike, return_logits: bool = False) -> dict[str, Any]: ...

class SpeechToTextStream:
    def __init__(self, model: KyutaiSpeechToText, resample: bool = False) -> None: ...
    def accept_waveform(self, sample_rate: int, samples: TensorLike) -> list[dict[str, Any]]: ...
    def input_finished(self) -> list[dict[str, Any]]: ...
    def reset(self) -> None: ...
    def transcript(self) -> dict[str, Any]: ...

class SpeechToTextBatch:
    def __init__(self, model: KyutaiSpeechToText, slots: int, resample: bool = False) -> None: ...
    def open(self) -> int: ...
    def close(self, slot: int) -> None: ...
    def accept_waveform(self, slot: int, sample_rate: int, samples: TensorLike) -> None: ...
    def input_finished(self, slot: int) -> None: ...
    def step(self) -> int: ...
    def run(self) -> None: ...
    def take_words(self, slot: int) -> list[dict[str, Any]]: ...
    def transcript(self, slot: int) -> dict[str, Any]: ...
    def done(self, slot: int) -> bool: ...

class CsmBackboneState:
    @property
    def length(self) -> int: ...

class Csm:
    @staticmethod
    def from_pretrained(dir: str, device: str = "cpu", dtype: str = "float32") -> "Csm": ...
    @property
    def sampling_rate(self) -> int: ...
    @property
    def num_codebooks(self) -> int: ...
    @property
    def generation_config(self) -> dict[str, Any]: ...
    def process(self, conversation: list[dict[str, Any]]) -> dict[str, Any]: ...
    def embed(self, inputs: dict[str, Any]) -> torch.Tensor: ...
    def embed_frames(self, codes: TensorLike) -> torch.Tensor: ...
    def start(self, capacity: int) -> CsmBackboneState: ...
    def forward(
        self, inputs_embeds: TensorLike, state: CsmBackboneState, intermediates: bool = False
    ) -> Union[torch.Tensor, tuple[torch.Tensor, dict[str, torch.Tensor]]]: ...
    def logits(self, hidden: TensorLike) -> torch.Tensor: ...
    def decode_depth(
        self, backbone_last_hidden_state: TensorLike, first_codes: TensorLike, seed: int = 0,
        **generation: Any
    ) -> tuple[torch.Tensor, torch.Tensor]: ...
    def generate(
        self,
        conversation: list[dict[str, Any]],
        max_frames: Optional[int] = None,
        temperature: Optional[float] = None,
        seed: int = 0,
        return_logits: bool = False,
        decode_audio: bool = True,
        on_frame: Optional[Callable[[int, torch.Tensor, Optional[torch.Tensor]], Optional[bool]]] = None,
        **generation: Any,
    ) -> dict[str, Any]: ...
    def decode(self, audio_codes: TensorLike) -> torch.Tensor: ...
