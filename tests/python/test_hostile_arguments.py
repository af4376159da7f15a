"""Every tensor-taking entry, given the arguments a careless or hostile caller passes (empty
batches, wrong ranks and dtypes, NaN, non-contiguous views, out-of-range ids), either works or
raises an alto.Error naming what it expected: never torch's own RuntimeError from deep inside."""
import pytest
import torch

import alto
import alto.features as features
import alto.models as models
import alto.tokenizers as tokenizers
from conftest import DATA

MODELS = DATA / "models"

ODD_ARGUMENTS = {
    "empty batch": lambda shape: torch.zeros((0,) + shape[1:]),
    "empty last axis": lambda shape: torch.zeros(shape[:-1] + (0,)),
    "rank 1": lambda shape: torch.zeros(shape[-1]),
    "rank + 3": lambda shape: torch.zeros((1, 1, 1) + shape),
    "scalar": lambda shape: torch.tensor(1.0),
    "bool": lambda shape: torch.zeros(shape, dtype=torch.bool),
    "complex": lambda shape: torch.zeros(shape, dtype=torch.complex64),
    "int64": lambda shape: torch.zeros(shape, dtype=torch.int64),
    "float64": lambda shape: torch.zeros(shape, dtype=torch.float64),
    "float16": lambda shape: torch.zeros(shape, dtype=torch.float16),
    "NaN": lambda shape: torch.full(shape, float("nan")),
    "non-contiguous": lambda shape: torch.zeros(shape + (2,))[..., 0],
    "negative ids": lambda shape: torch.full(shape, -5, dtype=torch.int64),
    "huge ids": lambda shape: torch.full(shape, 10**12, dtype=torch.int64),
    "requires grad": lambda shape: torch.zeros(shape, requires_grad=True),
}


def codec_entries(name):
    codec = tokenizers.AudioTokenizer.from_pretrained(str(MODELS / name))
    wave = (1, codec.channels, 4000)
    codes = tuple(codec.encode(torch.zeros(wave)).shape)
    entries = {f"{name} encode": (codec.encode, wave), f"{name} decode": (codec.decode, codes)}
    if codec.supports_streaming:
        entries[f"{name} encode_step"] = (lambda x: codec.stream().encode_step(x), wave)
        entries[f"{name} decode_step"] = (lambda x: codec.stream().decode_step(x), codes)
    return entries


def entries():
    whisper = models.Whisper.from_pretrained(str(MODELS / "whisper-tiny-random"))
    hidden = tuple(whisper.encode(torch.zeros(1, 80, 3000)).shape)
    encoder = models.AudioEncoder.from_pretrained(str(MODELS / "whisper-tiny-random"))
    audio_lm = models.AudioLanguageModel.from_pretrained(str(MODELS / "qwen2-audio-tiny-random"))
    text = audio_lm.text_decoder
    kyutai = models.KyutaiSpeechToText.from_pretrained(str(MODELS / "kyutai-stt-tiny-random"))
    k = kyutai.num_codebooks
    found = {
        "WhisperFeatureExtractor": (features.WhisperFeatureExtractor().compute, (1, 16000)),
        "KaldiFbank": (features.KaldiFbank().compute, (1, 16000)),
        "KaldiMfcc": (features.KaldiMfcc().compute, (1, 16000)),
        "MelSpectrogram": (features.MelSpectrogram().compute, (1, 16000)),
        "SeamlessM4TFeatureExtractor": (features.SeamlessM4TFeatureExtractor().compute, (1, 16000)),
        "Wav2Vec2FeatureExtractor": (features.Wav2Vec2FeatureExtractor().compute, (1, 16000)),
        "Stft": (features.Stft().compute, (1, 16000)),
        "InverseStft": (features.InverseStft().compute, (1, 201, 10)),
        "resample": (lambda x: alto.resample(x, 16000, 8000), (1, 16000)),
        "Whisper.encode": (whisper.encode, (1, 80, 3000)),
        "Whisper.start": (whisper.start, hidden),
        "Whisper.detect_language": (whisper.detect_language, (1, 80, 3000)),
        "Whisper.transcribe": (whisper.transcribe, (16000,)),
        "AudioEncoder.embed": (encoder.embed, (16000,)),
        "TextDecoder.embed": (text.embed, (1, 4)),
        "TextDecoder.logits": (text.logits, (1, 4, text.config["hidden_size"])),
        "TextDecoder.generate": (lambda x: text.generate(x, max_new_tokens=2), (1, 4)),
        "AudioLanguageModel.transcription_inputs": (audio_lm.transcription_inputs, (16000,)),
        "AudioLanguageModel.generate": (lambda x: audio_lm.generate(x, max_new_tokens=2), (1, 4)),
        "AudioLanguageModel.generate input_ids": (
            lambda x: audio_lm.generate({"input_ids": x}, max_new_tokens=2), (1, 4)),
        "KyutaiSpeechToText.process": (kyutai.process, (1, 24000)),
        "KyutaiSpeechToText.encode": (kyutai.encode, (1, 1, 24000)),
        "KyutaiSpeechToText.embed": (kyutai.embed, (1, k + 1, 3)),
        "KyutaiSpeechToText.transcribe": (kyutai.transcribe, (24000,)),
        "KyutaiSpeechToText.transcribe_codes": (kyutai.transcribe_codes, (1, k, 3)),
        "SpeechToTextStream.accept_waveform": (
            lambda x: models.SpeechToTextStream(kyutai).accept_waveform(24000, x), (1, 2400)),
        "TextTokenizer.decode": (kyutai.tokenizer.decode, (4,)),
    }
    for name in ["mimi-tiny-random", "dac-16khz-tiny-random", "encodec-24khz-tiny-random"]:
        found.update(codec_entries(name))
    return found


@pytest.fixture(scope="module")
def all_entries():
    return entries()


def test_odd_arguments_are_refused_as_alto_errors(all_entries):
    leaks, refused = [], {name: 0 for name in all_entries}
    for name, (entry, shape) in all_entries.items():
        for odd, make in ODD_ARGUMENTS.items():
            try:
                entry(make(shape))
            except alto.Error:
                refused[name] += 1
            except TypeError as e:  # pybind11's own: no overload takes this Python type
                if "incompatible function arguments" not in str(e):
                    leaks.append(f"{name}({odd}): TypeError: {e}")
            except Exception as e:  # noqa: BLE001 - anything else is what this test looks for
                leaks.append(f"{name}({odd}): {type(e).__name__}: {str(e).splitlines()[0]}")
    assert not leaks, "\n".join(leaks)
    # Each entry meets arguments it must refuse (a wrong rank at least).
    assert not [name for name, count in refused.items() if count == 0]


def test_a_tensor_is_not_the_processor_output(all_entries):
    entry, shape = all_entries["AudioLanguageModel.generate"]
    with pytest.raises(alto.InvalidArgument, match="expected a mapping with input_ids.*Tensor"):
        entry(torch.zeros(shape, dtype=torch.int64))


def test_empty_batches_name_the_expected_shape(all_entries):
    for name, expected in [("Stft", r"\[batch >= 1, samples\]"),
                           ("mimi-tiny-random encode", r"\[batch >= 1, 1 channels"),
                           ("KyutaiSpeechToText.encode", r"\[batch >= 1, 1 channels")]:
        entry, shape = all_entries[name]
        with pytest.raises(alto.InvalidArgument, match=expected):
            entry(torch.zeros((0,) + shape[1:]))
