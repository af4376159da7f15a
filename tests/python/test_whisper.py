"""alto.models.Whisper against the golden reference of transformers' WhisperForConditionalGeneration."""

import pytest
import torch

import alto

from conftest import max_abs, run_concurrently


@pytest.fixture(scope="module")
def model_dir(data):
    return data / "models" / "whisper-tiny-random"


@pytest.fixture(scope="module")
def model(model_dir):
    return alto.models.Whisper.from_pretrained(str(model_dir))


@pytest.fixture(scope="module")
def io(model_dir):
    return alto.load_safetensors(str(model_dir / "io.safetensors"))


def test_the_issue_example(model_dir, io):
    wave, sr = alto.load_audio(str(model_dir / "input.wav"))
    assert wave.dtype == torch.float32 and wave.shape == (1, 80000) and sr == 16000
    fe = alto.FeatureExtractor.from_pretrained(str(model_dir))
    feats = fe(wave[0], sampling_rate=sr)
    assert feats["input_features"].shape == (1, 80, 3000)
    assert max_abs(feats["input_features"], io["input_features"]) <= 5e-4
    w = alto.models.Whisper.from_pretrained(str(model_dir))
    h = w.encode(feats["input_features"])
    assert h.shape == (1, 1500, 64)
    inter = w.encode(feats["input_features"], return_intermediates=True)
    assert torch.equal(inter["last_hidden_state"], h)


def test_encoder_golden(model, io):
    h = model.encode(io["input_features"])
    assert max_abs(h, io["encoder.last_hidden_state"]) <= 5e-5
    inter = model.encode(io["input_features"].numpy(), return_intermediates=True)
    pairs = {
        "model.encoder.conv1": ("encoder.conv1_gelu", 2e-5),
        "model.encoder.conv2": ("encoder.conv2_gelu", 1e-4),
        "model.encoder.layers.0": ("encoder.layer0_output", 5e-4),
        "model.encoder.layers.1": ("encoder.layer1_output", 1e-3),
        "last_hidden_state": ("encoder.last_hidden_state", 5e-5),
    }
    # The convolutions are named as a forward hook on them sees them: before the GELU.
    gelu_after = {"model.encoder.conv1", "model.encoder.conv2"}
    for name, (golden_name, atol) in pairs.items():
        value = torch.nn.functional.gelu(inter[name]) if name in gelu_after else inter[name]
        assert max_abs(value, io[golden_name]) <= atol, name
    weights = model.encode(io["input_features"], return_intermediates=True, attention_weights=True)
    attn = weights["model.encoder.layers.0.self_attn.attn_weights"]
    assert attn.shape == (1, 4, 1500, 1500)
    torch.testing.assert_close(attn.sum(-1), torch.ones(1, 4, 1500), atol=1e-4, rtol=0)


def test_decoder_golden(model, io):
    h = model.encode(io["input_features"])
    logits = model.decode(io["decoder.prompt_ids"], encoder_hidden_states=h)
    assert logits.shape == (1, 4, 51865)
    assert max_abs(logits, io["decoder.logits"]) <= 2e-4
    logits, inter = model.decode(io["decoder.prompt_ids"], encoder_hidden_states=h,
                                 return_intermediates=True)
    assert max_abs(inter["model.decoder.embeddings"], io["decoder.hidden_states.0"]) <= 1e-6
    assert max_abs(inter["model.decoder.layers.0"], io["decoder.hidden_states.1"]) <= 5e-4


def test_cached_greedy_decoding_golden(model, io):
    h = model.encode(io["input_features"])
    state = model.start(h)
    logits = model.decode(io["decoder.prompt_ids"], state=state)
    tokens = []
    for t in range(24):
        step = logits[0, -1]
        assert max_abs(step, io["greedy.step_logits"][t]) <= 2e-4, t
        token = int(step.argmax())
        tokens.append(token)
        logits = model.decode(torch.tensor([[token]]), state=state)
    assert tokens == io["greedy.tokens"].tolist()
    assert state.length == 28


def test_generate_and_transcribe(model, io, data):
    result = model.generate(io["input_features"], language="en", max_new_tokens=8)
    assert result["language"] == "en"
    assert isinstance(result["tokens"], list) and 0 < len(result["tokens"]) <= 8
    beam = model.generate(io["input_features"], language="en", beam_size=2, max_new_tokens=4)
    assert len(beam["tokens"]) <= 4
    probabilities = model.detect_language(io["input_features"])
    assert abs(sum(probabilities.values()) - 1) < 1e-6
    transcript = model.transcribe(io["audio"], language="en", temperatures=[0.0],
                                  tokenizer=str(data / "tokenizers" / "whisper-multilingual"))
    assert isinstance(transcript["text"], str) and transcript["language"] == "en"
    assert isinstance(transcript["segments"], list)
    # A language's name works as its code; segments end with the audio unless asked otherwise.
    tokenizer = str(data / "tokenizers" / "whisper-multilingual")
    named = model.transcribe(io["audio"], language="English", temperatures=[0.0],
                             tokenizer=tokenizer, timestamps=True)
    seconds = io["audio"].shape[-1] / 16000
    assert named["language"] == "en"
    assert all(s["end"] <= seconds for s in named["segments"])
    unclamped = model.transcribe(io["audio"], language="en", temperatures=[0.0],
                                 tokenizer=tokenizer, timestamps=True, clamp_segments=False)
    assert unclamped["text"] == named["text"]
    assert max(s["end"] for s in unclamped["segments"]) > seconds  # the reference's times


def test_bad_inputs(model, io):
    with pytest.raises(alto.InvalidArgument, match="input_features"):
        model.encode(torch.zeros(1, 80, 100))
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        model.encode(torch.zeros(1, 80, 3000, dtype=torch.int32))
    with pytest.raises(alto.InvalidArgument, match="dimensions"):
        model.encode(torch.zeros(80))
    with pytest.raises(alto.InvalidArgument, match=r"batch >= 1.*\[0, 80, 3000\]"):
        model.encode(torch.zeros(0, 80, 3000))
    with pytest.raises(alto.InvalidArgument, match="meta tensor"):
        model.encode(torch.zeros(1, 80, 3000, device="meta"))
    with pytest.raises(alto.InvalidArgument, match="dense tensors.*Sparse"):
        model.encode(torch.zeros(1, 80, 3000).to_sparse())
    bad = io["input_features"].clone()
    bad[0, 3, 7] = float("nan")
    with pytest.raises(alto.InvalidArgument, match="NaN"):
        model.encode(bad)
    h = model.encode(io["input_features"])
    with pytest.raises(alto.InvalidArgument, match="integer"):
        model.decode(torch.zeros(1, 4), encoder_hidden_states=h)
    with pytest.raises(alto.InvalidArgument, match="exactly one"):
        model.decode(io["decoder.prompt_ids"])
    with pytest.raises(alto.InvalidArgument, match="language"):
        model.generate(io["input_features"], language="xx")


def test_loading_errors(tmp_path, model_dir):
    with pytest.raises(alto.IoError):
        alto.models.Whisper.from_pretrained(str(tmp_path))
    with pytest.raises(alto.Error, match="'int4'"):
        alto.models.Whisper.from_pretrained(str(model_dir), dtype="int4")


def test_concurrent_encode_and_decode(model, io):
    expected = model.encode(io["input_features"])
    expected_logits = model.decode(io["decoder.prompt_ids"], encoder_hidden_states=expected)

    def work():
        for _ in range(2):
            h = model.encode(io["input_features"])
            assert max_abs(h, expected) <= 1e-5
            state = model.start(h)
            logits = model.decode(io["decoder.prompt_ids"], state=state)
            assert max_abs(logits, expected_logits) <= 1e-4

    run_concurrently(work, threads=4)
