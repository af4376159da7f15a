"""alto.features against the golden references and against torchaudio / torch on the same input."""

import numpy as np
import pytest
import torch
import torchaudio

import alto
import alto.features as F

from conftest import max_abs, run_concurrently


def golden(data, case):
    tensors, metadata = alto.load_safetensors(str(data / "features" / f"{case}.safetensors"),
                                              return_metadata=True)
    return tensors, metadata


def options_from_metadata(extractor_type, metadata, **base):
    """The golden call's parameters, typed as the extractor's own options."""
    options = {}
    for key, default in extractor_type(**base).options.items():
        if key not in metadata:
            continue
        text = metadata[key]
        if isinstance(default, bool):
            options[key] = text == "true"
        elif isinstance(default, int):
            options[key] = int(float(text))
        elif isinstance(default, float):
            options[key] = float(text)
        else:
            options[key] = text
    return options


@pytest.mark.parametrize("case", ["kaldi_fbank80__speech_4s", "kaldi_fbank80_int16scale__speech_4s",
                                  "kaldi_fbank80_nosnip__short_0p3s"])
def test_kaldi_fbank_golden(data, case):
    t, md = golden(data, case)
    fbank = F.KaldiFbank(**options_from_metadata(F.KaldiFbank, md))
    scale = float(md.get("input_scale", "1"))
    out = fbank.compute(t["input"] * scale)
    assert out.shape == t["expected"].shape
    assert max_abs(out, t["expected"]) <= float(md["atol"])


def test_kaldi_mfcc_golden(data):
    t, md = golden(data, "kaldi_mfcc13__noise_1s")
    mfcc = F.KaldiMfcc(**options_from_metadata(F.KaldiMfcc, md))
    out = mfcc.compute(t["input"])
    assert out.shape == t["expected"].shape
    assert max_abs(out, t["expected"]) <= float(md["atol"])


@pytest.mark.parametrize("case", ["melspec_htk_nonorm__speech_4s", "melspec_slaney_slaneynorm__chirp_1s"])
def test_mel_spectrogram_golden(data, case):
    t, md = golden(data, case)
    # torchaudio's default n_mels=128 leaves empty filters at n_fft=400, which alto refuses.
    options = options_from_metadata(F.MelSpectrogram, md, n_mels=80)
    options["norm"] = "none" if md["norm"] == "None" else md["norm"]
    options["f_max"] = float(md["f_max"])
    mel = F.MelSpectrogram(**options)
    out = mel.compute(t["input"])
    expected = t["expected"]
    assert out.shape == expected.shape
    tolerance = float(md["atol"]) + float(md["rtol"]) * expected.abs()
    assert bool(((out - expected).abs() <= tolerance).all())


def test_stft_golden(data):
    t, md = golden(data, "stft_512_128__chirp_1s")
    stft = F.Stft(n_fft=512, hop_length=128, win_length=512)
    out = stft(t["input"])
    assert out.dtype == torch.complex64 and out.shape == t["expected_real"].shape
    assert max_abs(out.real, t["expected_real"]) <= float(md["atol"])
    assert max_abs(out.imag, t["expected_imag"]) <= float(md["atol"])


def test_whisper_features_golden(data):
    t, md = golden(data, "whisper_hf_np_80__speech_4s")
    fe = alto.FeatureExtractor.from_pretrained(str(data / "features" / "configs" / "whisper-tiny-random"))
    assert isinstance(fe, F.WhisperFeatureExtractor)
    feats = fe(t["input"], sampling_rate=16000)
    assert list(feats) == ["input_features"]
    assert feats["input_features"].shape == (1, 80, 3000)
    assert max_abs(feats["input_features"][0], t["expected"]) <= float(md["atol"])
    masked = fe(t["input"].numpy(), sampling_rate=16000, return_attention_mask=True)
    assert masked["attention_mask"].shape == (1, 3000)
    assert masked["attention_mask"].dtype == torch.int32
    assert masked["attention_mask"][0, :400].all() and not masked["attention_mask"][0, 401:].any()


def test_seamless_golden(data):
    t, md = golden(data, "seamless_m4t__speech_4s")
    fe = F.SeamlessM4TFeatureExtractor()
    out = fe(t["input"], sampling_rate=16000)
    assert out["input_features"].shape == (1,) + tuple(t["expected"].shape)
    assert max_abs(out["input_features"][0], t["expected"]) <= float(md["atol"])
    assert out["attention_mask"].shape == out["input_features"].shape[:2]


def test_wav2vec2_normalises():
    wave = torch.randn(8000) * 3 + 1
    out = F.Wav2Vec2FeatureExtractor()(wave, sampling_rate=16000)["input_values"]
    assert out.shape == (1, 8000)
    assert abs(out.mean().item()) < 1e-4 and abs(out.std(unbiased=False).item() - 1) < 1e-3


def speech(data):
    return golden(data, "kaldi_fbank80__speech_4s")[0]["input"]


def test_kaldi_fbank_vs_torchaudio(data):
    wave = speech(data) * 32768
    options = dict(num_mel_bins=40, frame_length=20.0, frame_shift=8.0, window_type="hamming",
                   snip_edges=False, use_energy=True, low_freq=60.0, high_freq=-400.0)
    ours = F.KaldiFbank(**options).compute(wave)
    reference = torchaudio.compliance.kaldi.fbank(wave[None], **options)
    assert ours.shape == reference.shape
    assert max_abs(ours, reference) < 5e-3


def test_mel_spectrogram_vs_torchaudio(data):
    wave = speech(data)
    options = dict(sample_rate=16000, n_fft=512, win_length=400, hop_length=128, f_min=30.0,
                   f_max=7600.0, n_mels=64, power=1.0, center=True, pad_mode="constant")
    ours = F.MelSpectrogram(**options, norm="slaney", mel_scale="slaney").compute(wave)
    reference = torchaudio.transforms.MelSpectrogram(**options, norm="slaney", mel_scale="slaney")(wave)
    assert ours.shape == reference.shape
    assert bool(((ours - reference).abs() <= 1e-4 + 1e-3 * reference.abs()).all())


@pytest.mark.parametrize("center,pad_mode", [(True, "reflect"), (True, "constant"), (False, "reflect")])
def test_stft_vs_torch(data, center, pad_mode):
    wave = speech(data)[:20000]
    ours = F.Stft(n_fft=400, hop_length=160, center=center, pad_mode=pad_mode).compute(wave)
    reference = torch.stft(wave, 400, hop_length=160, window=torch.hann_window(400), center=center,
                           pad_mode=pad_mode, return_complex=True)
    assert ours.shape == reference.shape
    assert max_abs(torch.view_as_real(ours), torch.view_as_real(reference)) < 2e-4
    batch = F.Stft(n_fft=400, hop_length=160, center=center, pad_mode=pad_mode).compute(
        torch.stack([wave, wave]))
    assert torch.equal(batch[1], ours)


def test_istft_inverts_stft(data):
    wave = speech(data)[:16000]
    spectrum = F.Stft(n_fft=512, hop_length=128).compute(wave)
    back = F.InverseStft(n_fft=512, hop_length=128).compute(spectrum, length=16000)
    assert back.shape == (16000,)
    assert max_abs(back, wave) < 1e-5


def test_mel_filter_bank_and_window(data):
    t, _ = golden(data, "mel_filters_hf_whisper80")
    bank = F.mel_filter_bank(num_frequency_bins=201, num_mel_filters=80, max_frequency=8000.0,
                             norm="slaney", mel_scale="slaney")
    assert bank.dtype == torch.float64 and bank.shape == t["expected_float64"].shape
    assert max_abs(bank, t["expected_float64"]) < 1e-12
    assert torch.allclose(F.make_window("hann", 400), torch.hann_window(400), atol=1e-7)


def test_options_and_repr():
    fbank = F.KaldiFbank(num_mel_bins=40, window_type="hanning")
    assert fbank.options["num_mel_bins"] == 40
    assert fbank.options["window_type"] == "hann"
    assert "num_mel_bins=40" in repr(fbank)
    again = F.KaldiFbank(**fbank.options)
    assert again.options == fbank.options
    assert fbank.name == "kaldi-fbank" and fbank.sampling_rate == 16000
    assert "num_mel_bins=23" in F.KaldiFbank.__doc__


def test_bad_options():
    with pytest.raises(alto.InvalidArgument, match="no option 'n_mel'"):
        F.MelSpectrogram(n_mel=80)
    with pytest.raises(alto.InvalidArgument, match="num_mel_bins"):
        F.KaldiFbank(num_mel_bins="many")
    with pytest.raises(alto.InvalidArgument, match="num_mel_bins"):
        F.KaldiFbank(num_mel_bins=0)
    with pytest.raises(alto.InvalidArgument, match="window"):
        F.Stft(window="triangle")
    with pytest.raises(alto.IoError):
        alto.FeatureExtractor.from_pretrained("/nonexistent/model")


def test_bad_inputs():
    fbank = F.KaldiFbank()
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        fbank.compute(torch.zeros(16000, dtype=torch.int64))
    with pytest.raises(alto.InvalidArgument, match="dimensions"):
        fbank.compute(torch.zeros(1, 1, 16000))
    nan = torch.zeros(16000)
    nan[123] = float("nan")
    with pytest.raises(alto.InvalidArgument, match="NaN"):
        fbank.compute(nan)
    with pytest.raises(alto.InvalidArgument, match="empty"):
        fbank.compute(torch.zeros(0))
    fe = F.WhisperFeatureExtractor()
    with pytest.raises(alto.InvalidArgument, match="resample"):
        fe(torch.zeros(16000), sampling_rate=44100)
    with pytest.raises(alto.InvalidArgument, match="raw_speech"):
        fe("not audio")
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        fe(np.zeros(100, dtype=np.int16))


def test_batches_and_lists():
    fe = F.KaldiFbank()
    clips = [torch.randn(16000), torch.randn(8000)]
    out = fe(clips)
    assert out["input_features"].shape == (2, 98, 23)
    assert out["attention_mask"].shape == (2, 98)
    assert torch.equal(out["input_features"][1, :48], fe.compute(clips[1]))
    stacked = fe(torch.stack([clips[0], clips[0]]))
    assert stacked["input_features"].shape == (2, 98, 23)


def test_concurrent_calls_agree(data):
    wave = speech(data)
    fbank = F.KaldiFbank(num_mel_bins=80)
    whisper = F.WhisperFeatureExtractor()
    expected_fbank = fbank.compute(wave)
    expected_whisper = whisper(wave)["input_features"]

    def work():
        for _ in range(5):
            assert torch.equal(fbank.compute(wave), expected_fbank)
            assert torch.equal(whisper(wave)["input_features"], expected_whisper)

    run_concurrently(work, threads=6)


def test_the_registry_lists_and_builds_every_extractor():
    registry = F.extractors()
    assert {"kaldi-fbank", "kaldi-mfcc", "mel", "whisper", "seamless-m4t", "wav2vec2"} <= set(registry)
    assert registry["whisper"]["transformers_type"] == "WhisperFeatureExtractor"
    assert registry["mel"]["options"]["n_mels"] == "128"
    mel = F.create("mel", sample_rate=22050, n_fft=1024, n_mels=80)
    assert isinstance(mel, F.MelSpectrogram)
    assert mel.sampling_rate == 22050 and mel.options["n_mels"] == 80
    with pytest.raises(alto.Unsupported, match="unknown feature extractor 'melody'"):
        F.create("melody")
    with pytest.raises(alto.InvalidArgument, match="n_mels"):
        F.create("mel", n_mels="many")
    assert set(alto.AudioTokenizer.model_types()) == {"encodec", "mimi", "dac"}
