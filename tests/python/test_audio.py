"""alto.load_audio / save_audio / resample / AudioStreamReader against the fixtures and torchaudio."""
import json
import threading

import pytest
import torch
import torchaudio

import alto

from conftest import run_concurrently


def test_load_audio_layout(data):
    fixtures = json.loads((data / "fixtures.json").read_text())
    for name in ("stereo44k_f32.wav", "stereo44k.mp3", "stereo44k.m4a", "stereo44k.opus"):
        wave, sr = alto.load_audio(str(data / name))
        expected = fixtures[name]
        assert isinstance(wave, torch.Tensor) and wave.dtype == torch.float32
        assert tuple(wave.shape) == (expected["channels"], expected["frames"])
        assert sr == expected["sample_rate"]
        assert wave.is_contiguous()


def test_load_audio_equals_torchaudio_on_float_wav(data):
    path = str(data / "stereo44k_f32.wav")
    wave, sr = alto.load_audio(path)
    reference, reference_sr = torchaudio.load(path)
    assert sr == reference_sr
    assert torch.equal(wave, reference)


def test_load_audio_equals_golden_input(data):
    golden = alto.load_safetensors(str(data / "features" / "kaldi_fbank80__speech_4s.safetensors"))
    wave, sr = alto.load_audio(str(data / "features" / "kaldi_fbank80__speech_4s.wav"))
    assert sr == 16000
    assert torch.equal(wave[0], golden["input"])


def test_load_audio_options(data):
    path = str(data / "stereo44k_f32.wav")
    full, _ = alto.load_audio(path)
    mono, _ = alto.load_audio(path, mono=True)
    assert mono.shape == (1, full.shape[1])
    torch.testing.assert_close(mono[0], full.mean(0), atol=1e-6, rtol=0)
    part, _ = alto.load_audio(path, offset=0.25, duration=0.5)
    assert part.shape == (2, 22050)
    assert torch.equal(part, full[:, 11025:33075])
    resampled, sr = alto.load_audio(path, sample_rate=16000)
    assert sr == 16000 and resampled.shape == (2, 16000)
    right, _ = alto.load_audio(path, channel=1)
    assert torch.equal(right[0], full[1])


def test_load_audio_result_owns_its_samples(data):
    wave, _ = alto.load_audio(str(data / "stereo44k_f32.wav"))
    view = wave.numpy()  # no copy: the same memory
    assert view.ctypes.data == wave.data_ptr()


def test_load_audio_errors(tmp_path):
    with pytest.raises(alto.IoError, match="missing.wav"):
        alto.load_audio("missing.wav")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunk")
    with pytest.raises(alto.Error, match="junk.wav"):
        alto.load_audio(str(junk))
    with pytest.raises(alto.InvalidArgument, match="offset"):
        alto.load_audio(str(junk), offset=-1)
    with pytest.raises(alto.InvalidArgument, match="resampler"):
        alto.load_audio(str(junk), resampler="best")


def test_save_audio_round_trip(tmp_path):
    wave = (torch.randint(-32768, 32768, (2, 1000)) / 32768.0).float()
    for name, encoding in (("a.wav", "16"), ("b.flac", "16"), ("c.wav", "32f")):
        path = str(tmp_path / name)
        alto.save_audio(path, wave, 8000, encoding=encoding)
        back, sr = alto.load_audio(path)
        assert sr == 8000
        assert torch.equal(back, wave)
    # numpy in, mono [frames] in.
    alto.save_audio(str(tmp_path / "m.wav"), wave[0].numpy(), 8000, encoding="32f")
    back, _ = alto.load_audio(str(tmp_path / "m.wav"))
    assert torch.equal(back[0], wave[0])


def test_save_audio_errors(tmp_path):
    bad = torch.zeros(100)
    bad[10] = float("nan")
    with pytest.raises(alto.InvalidArgument, match="NaN"):
        alto.save_audio(str(tmp_path / "x.wav"), bad, 16000)
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        alto.save_audio(str(tmp_path / "x.wav"), torch.zeros(100, dtype=torch.int16), 16000)
    with pytest.raises(alto.InvalidArgument, match="dimensions"):
        alto.save_audio(str(tmp_path / "x.wav"), torch.zeros(1, 1, 100), 16000)
    with pytest.raises(alto.Error):
        alto.save_audio(str(tmp_path / "no" / "dir" / "x.wav"), torch.zeros(100), 16000)


def test_resample_length_and_quality():
    t = torch.arange(44100) / 44100.0
    tone = (0.5 * torch.sin(2 * torch.pi * 440.0 * t)).float()
    out = alto.resample(tone, 44100, 16000)
    assert out.shape == (16000,)
    expected = 0.5 * torch.sin(2 * torch.pi * 440.0 * torch.arange(16000) / 16000.0)
    assert (out[100:-100].double() - expected[100:-100]).abs().max() < 1e-3
    stereo = alto.resample(torch.stack([tone, -tone]).numpy(), 44100, 16000, resampler="swr")
    assert stereo.shape == (2, 16000)
    with pytest.raises(alto.InvalidArgument):
        alto.resample(torch.zeros(10, dtype=torch.int32), 44100, 16000)


def test_stream_reader_equals_load_audio(data):
    path = str(data / "stereo44k.m4a")
    full, sr = alto.load_audio(path, sample_rate=16000, mono=True)
    reader = alto.AudioStreamReader(path, chunk_frames=4000, sample_rate=16000, mono=True)
    assert reader.sample_rate == 16000 and reader.channels == 1
    assert reader.source_info["sample_rate"] == 44100
    chunks = list(reader)
    assert all(c.shape[1] == 4000 for c in chunks[:-1])
    assert torch.equal(torch.cat(chunks, dim=1), full)


def test_stream_reader_shared_between_threads(data):
    path = str(data / "stereo44k_f32.wav")
    full, _ = alto.load_audio(path)
    reader = alto.AudioStreamReader(path, chunk_frames=441)
    got, lock = [], threading.Lock()

    def work():
        for chunk in reader:
            with lock:
                got.append(chunk)

    run_concurrently(work, threads=4)
    assert sum(c.shape[1] for c in got) == full.shape[1]


def test_stream_reader_missing_file():
    with pytest.raises(alto.IoError):
        alto.AudioStreamReader("missing.flac", chunk_frames=100)
