"""alto.AudioTokenizer (the codecs) against the golden transformers and moshi outputs: EnCodec, Mimi, DAC."""
import pydoc

import pytest
import torch

import alto

from conftest import max_abs, run_concurrently

@pytest.fixture(scope="module")
def codec_dir(data):
    path = data / "models" / "encodec-24khz-tiny-random"
    if not (path / "model.safetensors").exists():
        pytest.skip("tests/data/models/encodec-24khz-tiny-random is absent")
    return path


@pytest.fixture(scope="module")
def tok(codec_dir):
    return alto.AudioTokenizer.from_pretrained(str(codec_dir))


@pytest.fixture(scope="module")
def io(codec_dir):
    return alto.load_safetensors(str(codec_dir / "io.safetensors"))


def test_properties(tok):
    assert tok.model_type == "encodec"
    assert tok.sample_rate == 24000 and tok.channels == 1
    assert tok.frame_rate == pytest.approx(75)
    assert tok.hop_length == 320
    assert tok.num_codebooks == 32 and tok.codebook_size == 64
    assert "encodec" in repr(tok)


def test_the_issue_example(tok, codec_dir, io):
    wave, sr = alto.load_audio(str(codec_dir / "input.wav"))
    assert sr == tok.sample_rate
    codes = tok.encode(wave[None], bandwidth=1.5)
    assert codes.dtype == torch.int64
    assert torch.equal(codes, io["bw_1.5.audio_codes"])
    assert tok.decode(codes).shape == (1, 1, 31360)  # whole frames: 98 x 320
    audio = tok.decode(codes, num_samples=wave.shape[-1])
    assert audio.shape == (1, 1, 31200)
    assert max_abs(audio, io["bw_1.5.audio_values"]) <= 5e-5


@pytest.mark.parametrize("bandwidth", ["1.5", "6.0"])
def test_golden(tok, io, bandwidth):
    codes, scales = tok.encode(io["input_values"].numpy(), bandwidth=float(bandwidth), return_scales=True)
    assert scales is None  # normalize is false in this config
    assert torch.equal(codes, io[f"bw_{bandwidth}.audio_codes"])
    audio = tok.decode(codes, padding_mask=io["padding_mask"])
    assert audio.shape == io[f"bw_{bandwidth}.audio_values"].shape
    assert max_abs(audio, io[f"bw_{bandwidth}.audio_values"]) <= 5e-5


def test_default_bandwidth_is_the_smallest(tok, io):
    assert torch.equal(tok.encode(io["input_values"]), io["bw_1.5.audio_codes"])


def test_streaming_equals_offline(tok, io):
    if not tok.supports_streaming:
        with pytest.raises(alto.Unsupported):
            tok.stream()
        return
    offline = io["bw_1.5.audio_codes"][0]  # [batch, K, T]
    stream = tok.stream(bandwidth=1.5)
    x = io["input_values"]
    pieces = [stream.encode_step(x[..., i:i + 777]) for i in range(0, x.shape[-1], 777)]
    # The last, partial frame (padded offline) comes from encode_flush.
    tail = stream.encode_flush()
    streamed = torch.cat(pieces + ([tail] if tail is not None else []), dim=-1)
    assert torch.equal(streamed, offline)
    stream.reset()
    pieces = [stream.decode_step(offline[..., t:t + 1]) for t in range(offline.shape[-1])]
    tail = stream.decode_flush()
    audio = torch.cat(pieces + ([tail] if tail is not None else []), dim=-1)
    reference = tok.decode(io["bw_1.5.audio_codes"])  # whole frames, as decode_step returns
    assert audio.shape == reference.shape
    assert max_abs(audio, reference) <= 1e-4


def test_bad_inputs(tok, io, tmp_path):
    with pytest.raises(alto.InvalidArgument, match="dimensions"):
        tok.encode(io["audio"])
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        tok.encode(io["input_values"].to(torch.int16))
    nan = io["input_values"].clone()
    nan[0, 0, 5] = float("nan")
    with pytest.raises(alto.InvalidArgument, match="NaN"):
        tok.encode(nan)
    with pytest.raises(alto.InvalidArgument, match="integer"):
        tok.decode(io["bw_1.5.audio_codes"].float())
    bad_codes = io["bw_1.5.audio_codes"].clone()
    bad_codes[..., 0] = 64
    with pytest.raises(alto.InvalidArgument):
        tok.decode(bad_codes)
    with pytest.raises(alto.InvalidArgument):
        tok.encode(io["input_values"], bandwidth=2.0)
    with pytest.raises(alto.InvalidArgument, match="num_samples"):
        tok.decode(io["bw_1.5.audio_codes"], num_samples=0)
    with pytest.raises(alto.IoError):
        alto.AudioTokenizer.from_pretrained(str(tmp_path))


def test_help_reads_well():
    text = pydoc.render_doc(alto.AudioTokenizer, renderer=pydoc.plaintext)
    for word in ("from_pretrained", "encode", "decode", "stream", "audio_codes"):
        assert word in text


def test_concurrent_encode(tok, io):

    def work():
        for _ in range(3):
            assert torch.equal(tok.encode(io["input_values"], bandwidth=6.0), io["bw_6.0.audio_codes"])

    run_concurrently(work, threads=4)


@pytest.mark.parametrize("name,bandwidth", [("encodec-48khz-tiny-random", "3.0"),
                                            ("encodec-48khz-tiny-random", "6.0"),
                                            ("encodec-24khz-tiny-random-parametrized", "6.0")])
def test_golden_chunked_scaled_and_parametrized(data, name, bandwidth):
    """48 kHz stereo: chunks, per-chunk scales; the torch >= 2.1 weight-norm spelling."""
    folder = data / "models" / name
    tok = alto.AudioTokenizer.from_pretrained(str(folder))
    io = alto.load_safetensors(str(folder / "io.safetensors"))
    codes, scales = tok.encode(io["audio"][None], bandwidth=float(bandwidth), return_scales=True)
    assert torch.equal(codes, io[f"bw_{bandwidth}.audio_codes"])
    if f"bw_{bandwidth}.audio_scales" in io:
        assert max_abs(scales, io[f"bw_{bandwidth}.audio_scales"]) <= 1e-6
    else:
        assert scales is None
    audio = tok.decode(codes, scales, padding_mask=io["padding_mask"])
    assert audio.shape == io[f"bw_{bandwidth}.audio_values"].shape
    assert max_abs(audio, io[f"bw_{bandwidth}.audio_values"]) <= 5e-5


def _golden_codec(data, name):
    folder = data / "models" / name
    if not (folder / "model.safetensors").exists():
        pytest.skip(f"tests/data/models/{name} is absent")
    return (alto.AudioTokenizer.from_pretrained(str(folder)),
            alto.load_safetensors(str(folder / "io.safetensors")))


def test_mimi_golden_and_streaming(data):
    """Mimi (MANIFEST tolerances): codes exact, audio within 7e-6; moshi's frame-by-frame stream."""
    tok, io = _golden_codec(data, "mimi-tiny-random")
    assert tok.model_type == "mimi" and tok.supports_streaming
    assert torch.equal(tok.encode(io["input_values"]), io["audio_codes"])
    assert torch.equal(tok.encode(io["input_values"], num_quantizers=4), io["audio_codes_nq4"])
    assert max_abs(tok.decode(io["audio_codes"]), io["audio_values"]) <= 7e-6
    stream = tok.stream()
    x, hop = io["input_values"], tok.hop_length
    codes = torch.cat([stream.encode_step(x[..., i:i + hop]) for i in range(0, x.shape[-1], hop)], -1)
    assert torch.equal(codes, io["streaming_audio_codes"])
    frames = io["streaming_audio_codes"]
    audio = torch.cat([stream.decode_step(frames[..., t:t + 1]) for t in range(frames.shape[-1])], -1)
    assert max_abs(audio, io["streaming_audio_values"]) <= 7e-6


@pytest.mark.parametrize("name", ["dac-16khz-tiny-random", "dac-44khz-tiny-random"])
def test_dac_golden(data, name):
    """DAC (MANIFEST tolerances): codes exact, decode(codes) within 4e-5; no streaming."""
    tok, io = _golden_codec(data, name)
    assert tok.model_type == "dac" and not tok.supports_streaming
    codes = tok.encode(io["input_values"])
    assert torch.equal(codes, io["audio_codes"])
    assert torch.equal(tok.encode(io["input_values"], num_quantizers=2), io["audio_codes_nq2"])
    audio = tok.decode(codes)
    expected = io["audio_values_from_codes"]
    assert audio.shape == (1, 1, expected.shape[-1])
    assert max_abs(audio[0], expected) <= 4e-5
    with pytest.raises(alto.Unsupported):
        tok.stream()


def test_encode_checks_the_sampling_rate(tok, codec_dir, io):
    wave, sr = alto.load_audio(str(codec_dir / "input.wav"))
    expected = tok.encode(wave[None], bandwidth=1.5)
    assert torch.equal(tok.encode(wave[None], bandwidth=1.5, sampling_rate=sr), expected)
    # 16 kHz audio handed to the 24 kHz model is refused, naming both rates ...
    at_16k = alto.resample(wave, sr, 16000)
    with pytest.raises(alto.InvalidArgument, match="16000 Hz.*24000 Hz"):
        tok.encode(at_16k[None], sampling_rate=16000)
    with pytest.raises(alto.InvalidArgument, match="sampling_rate"):
        tok.encode(wave[None], resample=True)
    # ... or resampled on request, as alto.resample would.
    resampled = tok.encode(at_16k[None], bandwidth=1.5, sampling_rate=16000, resample=True)
    assert torch.equal(resampled, tok.encode(alto.resample(at_16k, 16000, sr)[None], bandwidth=1.5))
