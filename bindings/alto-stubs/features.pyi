"""alto.features: extractors equal to transformers' and torchaudio's."""
from typing import Any, Mapping, Optional, Sequence, Union

import numpy
import torch

TensorLike = Union[torch.Tensor, numpy.ndarray]
RawSpeech = Union[TensorLike, Sequence[TensorLike]]

class FeatureExtractor:
    @staticmethod
    def from_pretrained(dir: str) -> "FeatureExtractor":
        """The extractor a preprocessor_config.json (or its model folder) describes."""
    def __call__(
        self,
        raw_speech: RawSpeech,
        *,
        sampling_rate: Optional[int] = None,
        padding: Union[None, bool, str] = None,
        max_length: Optional[int] = None,
        truncation: Optional[bool] = None,
        pad_to_multiple_of: Optional[int] = None,
        return_attention_mask: Optional[bool] = None,
    ) -> dict[str, torch.Tensor]:
        """{"input_features" (or "input_values"): [batch, ...], "attention_mask": [batch, T]}."""
    @property
    def name(self) -> str: ...
    @property
    def sampling_rate(self) -> int: ...

class KaldiFbank(FeatureExtractor):
    """torchaudio.compliance.kaldi.fbank; keyword options as its arguments."""
    def __init__(
        self,
        *,
        sample_frequency: float = 16000.0,
        frame_length: float = 25.0,
        frame_shift: float = 10.0,
        dither: float = 0.0,
        dither_seed: int = 0,
        preemphasis_coefficient: float = 0.97,
        remove_dc_offset: bool = True,
        window_type: str = "povey",
        blackman_coeff: float = 0.42,
        round_to_power_of_two: bool = True,
        snip_edges: bool = True,
        energy_floor: float = 1.0,
        raw_energy: bool = True,
        use_energy: bool = False,
        htk_compat: bool = False,
        low_freq: float = 20.0,
        high_freq: float = 0.0,
        num_mel_bins: int = 23,
        use_log_fbank: bool = True,
        use_power: bool = True,
        subtract_mean: bool = False,
        min_duration: float = 0.0,
    ) -> None: ...
    def compute(self, wave: TensorLike) -> torch.Tensor:
        """[samples] -> [frames, num_mel_bins (+1 with use_energy)]."""
    @property
    def options(self) -> dict[str, Any]: ...

class KaldiMfcc(FeatureExtractor):
    """torchaudio.compliance.kaldi.mfcc; KaldiFbank's options (without use_log_fbank /
    use_power) plus num_ceps and cepstral_lifter."""
    def __init__(
        self,
        *,
        sample_frequency: float = 16000.0,
        frame_length: float = 25.0,
        frame_shift: float = 10.0,
        dither: float = 0.0,
        dither_seed: int = 0,
        preemphasis_coefficient: float = 0.97,
        remove_dc_offset: bool = True,
        window_type: str = "povey",
        blackman_coeff: float = 0.42,
        round_to_power_of_two: bool = True,
        snip_edges: bool = True,
        energy_floor: float = 1.0,
        raw_energy: bool = True,
        use_energy: bool = False,
        htk_compat: bool = False,
        low_freq: float = 20.0,
        high_freq: float = 0.0,
        num_mel_bins: int = 23,
        subtract_mean: bool = False,
        min_duration: float = 0.0,
        num_ceps: int = 13,
        cepstral_lifter: float = 22.0,
    ) -> None: ...
    def compute(self, wave: TensorLike) -> torch.Tensor:
        """[samples] -> [frames, num_ceps]."""
    @property
    def options(self) -> dict[str, Any]: ...

class MelSpectrogram(FeatureExtractor):
    """torchaudio.transforms.MelSpectrogram."""
    def __init__(
        self,
        *,
        sample_rate: int = 16000,
        n_fft: int = 400,
        win_length: int = 0,
        hop_length: int = 0,
        f_min: float = 0.0,
        f_max: Optional[float] = None,
        n_mels: int = 128,
        power: float = 2.0,
        normalized: bool = False,
        center: bool = True,
        pad_mode: str = "reflect",
        norm: str = "none",
        mel_scale: str = "htk",
    ) -> None: ...
    def compute(self, wave: TensorLike) -> torch.Tensor:
        """[samples] -> [n_mels, frames]."""
    @property
    def mel_filters(self) -> torch.Tensor: ...
    @property
    def options(self) -> dict[str, Any]: ...

class WhisperFeatureExtractor(FeatureExtractor):
    """transformers' WhisperFeatureExtractor (preprocessor_config.json's field names)."""
    def __init__(
        self,
        *,
        feature_size: int = 80,
        sampling_rate: int = 16000,
        hop_length: int = 160,
        chunk_length: int = 30,
        n_fft: int = 400,
        padding_value: float = 0.0,
        dither: float = 0.0,
        dither_seed: int = 0,
        return_attention_mask: bool = False,
        do_normalize: bool = False,
        padding_side: str = "right",
        clamp_dynamic_range: bool = True,
    ) -> None: ...
    def compute(self, wave: TensorLike, long_form: bool = False) -> torch.Tensor:
        """[samples] -> [feature_size, 3000] (long_form: samples / hop_length frames)."""
    @property
    def mel_filters(self) -> torch.Tensor: ...
    @property
    def options(self) -> dict[str, Any]: ...

class SeamlessM4TFeatureExtractor(FeatureExtractor):
    def __init__(
        self,
        *,
        feature_size: int = 80,
        sampling_rate: int = 16000,
        num_mel_bins: int = 80,
        padding_value: float = 0.0,
        stride: int = 2,
        return_attention_mask: bool = True,
        do_normalize_per_mel_bins: bool = True,
        padding_side: str = "right",
    ) -> None: ...
    def compute(self, wave: TensorLike) -> dict[str, torch.Tensor]: ...
    def fbank(self, wave: TensorLike) -> torch.Tensor: ...
    @property
    def options(self) -> dict[str, Any]: ...

class Wav2Vec2FeatureExtractor(FeatureExtractor):
    def __init__(
        self,
        *,
        feature_size: int = 1,
        sampling_rate: int = 16000,
        padding_value: float = 0.0,
        do_normalize: bool = True,
        return_attention_mask: bool = False,
        padding_side: str = "right",
    ) -> None: ...
    def compute(self, wave: TensorLike) -> torch.Tensor: ...
    @property
    def options(self) -> dict[str, Any]: ...

class Stft:
    """torch.stft on FFTW."""
    def __init__(
        self,
        *,
        n_fft: int = 400,
        hop_length: int = 0,
        win_length: int = 0,
        window: str = "hann",
        periodic: bool = True,
        center: bool = True,
        pad_mode: str = "reflect",
        normalized: bool = False,
        onesided: bool = True,
        power: Optional[float] = None,
    ) -> None: ...
    def compute(self, wave: TensorLike) -> torch.Tensor:
        """[(batch,) samples] -> [(batch,) n_freq, frames], complex64 unless power is set."""
    def __call__(self, wave: TensorLike) -> torch.Tensor: ...
    @property
    def window(self) -> torch.Tensor: ...
    @property
    def options(self) -> dict[str, Any]: ...

class InverseStft:
    """torch.istft; Stft's options (power None)."""
    def __init__(self, **options: Any) -> None: ...
    def compute(self, spectrum: TensorLike, length: Optional[int] = None) -> torch.Tensor: ...

def extractors() -> dict[str, dict[str, Any]]:
    """The registered extractors: {name: {transformers_type, description, options}}."""
def create(name: str, **options: Any) -> FeatureExtractor:
    """A registered extractor by name, built from keyword options."""
def create_from_text(name: str, options: Mapping[str, str]) -> FeatureExtractor:
    """A registered extractor from option text as `alto features` reads its flags."""
def mel_filter_bank(
    *,
    num_frequency_bins: int = 201,
    num_mel_filters: int = 80,
    min_frequency: float = 0.0,
    max_frequency: float = 8000.0,
    sampling_rate: int = 16000,
    norm: str = "none",
    mel_scale: str = "htk",
    triangularize_in_mel_space: bool = False,
) -> torch.Tensor: ...
def make_window(
    window: str, length: int, periodic: bool = True, blackman_coeff: float = 0.42
) -> torch.Tensor: ...
