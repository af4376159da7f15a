"""alto.models.AudioLanguageModel and TextDecoder against transformers 5.17's Qwen2-Audio and
Voxtral golden folders: processor outputs, named intermediates, logits, greedy continuation."""

import json

import pytest
import torch

import alto

from conftest import golden_model, max_abs, run_concurrently


@pytest.fixture(scope="module")
def qwen():
    return golden_model("qwen2-audio-tiny-random")


@pytest.fixture(scope="module")
def qwen_model(qwen):
    return alto.models.AudioLanguageModel.from_pretrained(str(qwen[0]))


def conversation(folder, pair):
    content = [{"type": "audio", "path": str(folder / "input.wav")}]
    if pair:
        wave, sr = alto.load_audio(str(folder / "input_2.wav"))
        content.append({"type": "audio", "audio": wave[0].numpy()})
    content.append({"type": "text",
                    "text": "Which of the two clips is longer?" if pair else "What does the person say?"})
    return [{"role": "user", "content": content}]


@pytest.mark.parametrize("prefix", ["", "pair_"])
def test_qwen2_audio_processor(qwen, qwen_model, prefix):
    folder, io, metadata, atol = qwen
    inputs = qwen_model.process(conversation(folder, bool(prefix)))
    assert inputs["prompt"] == metadata[prefix + "prompt_text"]
    for key in ("input_ids", "attention_mask", "feature_attention_mask"):
        assert torch.equal(inputs[key], io[prefix + key]), key
    assert max_abs(inputs["input_features"], io[prefix + "input_features"]) <= atol["input_features"]
    assert inputs["audio_tokens"] == io[prefix + "num_audio_tokens"].tolist()


@pytest.mark.parametrize("prefix", ["", "pair_"])
def test_qwen2_audio_layer_by_layer(qwen, qwen_model, prefix):
    _, io, metadata, atol = qwen
    # The processor outputs exactly as transformers handed them to the model.
    inputs = {k: io[prefix + k] for k in json.loads(metadata["processor_output_keys"])}
    logits, inter = qwen_model.logits(inputs, return_intermediates=True)
    assert max_abs(logits, io[prefix + "logits"]) <= atol[prefix + "logits"]
    pairs = {"last_hidden_state": "audio_encoder_last_hidden_state",
             "multi_modal_projector": "audio_projector_output", "inputs_embeds": "inputs_embeds"}
    for name, golden_name in pairs.items():
        assert max_abs(inter[name], io[prefix + golden_name]) <= atol[prefix + golden_name], name
    names = list(inter)
    assert names.index("audio_tower.layers.0") < names.index("multi_modal_projector") \
        < names.index("inputs_embeds")
    # Per-layer decoder states under the checkpoint's names (transformers 5's prefix here); the
    # final norm's output through the head gives the logits.
    layers = [n for n in names if n.startswith("language_model.model.model.layers.")]
    assert layers == [f"language_model.model.model.layers.{i}" for i in range(2)]
    assert inter[layers[0]].shape == io[prefix + "inputs_embeds"].shape
    head = qwen_model.text_decoder.logits(inter["language_model.model.model.norm"])
    assert torch.equal(head, logits)

    embedded = qwen_model.embed(inputs)
    assert max_abs(embedded["audio_embeds"], io[prefix + "audio_embeds_merged"]) <= \
        atol[prefix + "audio_embeds_merged"]
    positions = (io[prefix + "input_ids"][0] == qwen_model.audio_token_id).nonzero().flatten()
    assert torch.equal(embedded["audio_positions"], positions)
    assert torch.equal(embedded["inputs_embeds"][0, positions], embedded["audio_embeds"])


@pytest.mark.parametrize("prefix", ["", "pair_"])
def test_qwen2_audio_greedy_continuation(qwen, qwen_model, prefix):
    _, io, metadata, atol = qwen
    inputs = {k: io[prefix + k] for k in json.loads(metadata["processor_output_keys"])}
    streamed = []
    out = qwen_model.generate(inputs, max_new_tokens=12, return_logits=True,
                              on_token=lambda row, token: streamed.append(token))
    prompt = inputs["input_ids"].shape[1]
    assert torch.equal(out["generated_ids"], io[prefix + "generated_ids"][:, prompt:])
    assert streamed == out["generated_ids"][0].tolist()
    assert max_abs(out["logits"][:, 0], io[prefix + "generated_logits"]) <= \
        atol[prefix + "generated_logits"]
    assert out["text"] == metadata[prefix + "decoded_new_tokens"]
    assert len(out["token_seconds"]) == 11
    # The callback stops generation, and its exception reaches the caller.
    stopped = qwen_model.generate(inputs, max_new_tokens=12, on_token=lambda row, token: False)
    assert stopped["generated_ids"].shape == (1, 1)

    def boom(row, token):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        qwen_model.generate(inputs, max_new_tokens=12, on_token=boom)


def test_text_decoder_alone(qwen, qwen_model):
    _, io, metadata, atol = qwen
    decoder = qwen_model.text_decoder
    assert decoder.config["model_type"] == "qwen2"
    # Cached decoding equals the whole prefix at once.
    embeds = io["inputs_embeds"]
    full = decoder.forward(embeds)
    state = decoder.start(1, embeds.shape[1])
    parts = [decoder.forward(embeds[:, :100], state=state), decoder.forward(embeds[:, 100:], state=state)]
    assert state.length == embeds.shape[1]
    assert max_abs(torch.cat(parts, 1), full) <= 1e-5
    assert max_abs(decoder.logits(full), io["logits"]) <= atol["logits"]
    # generate() from inputs_embeds and ids is the audio LM's continuation.
    out = decoder.generate(io["input_ids"], inputs_embeds=embeds, max_new_tokens=12,
                           eos_token_id=qwen_model.generation_config["eos_token_id"])
    prompt = io["input_ids"].shape[1]
    assert torch.equal(out["generated_ids"], io["generated_ids"][:, prompt:])


def test_int8_linear_weights(qwen, qwen_model):
    folder, io, _, _ = qwen
    int8 = alto.models.AudioLanguageModel.from_pretrained(str(folder), dtype="int8")
    assert (int8.precision, int8.dtype) == ("int8", "float32")
    assert (qwen_model.precision, int8.text_decoder.precision) == ("float32", "int8")
    # The library's bound on this checkpoint (tests/models/qwen2_audio): within 2 % of the range.
    logits = int8.text_decoder.logits(int8.text_decoder.forward(io["inputs_embeds"]))
    assert max_abs(logits, io["logits"]) < 0.02 * io["logits"].abs().max().item()
    # Whisper quantizes its decoder; models whose weights stay in the compute dtype say so.
    whisper = alto.models.Whisper.from_pretrained(str(folder.parent / "whisper-tiny-random"),
                                                  dtype="int8")
    assert (whisper.precision, whisper.dtype) == ("int8", "float32")
    with pytest.raises(alto.Unsupported, match="keeps its weights in the compute dtype"):
        alto.AudioTokenizer.from_pretrained(str(folder.parent / "mimi-tiny-random"), dtype="int8")


def test_tokenizer_and_registry(qwen_model):
    tok = qwen_model.tokenizer
    assert isinstance(tok, alto.tokenizers.TextTokenizer)
    assert tok.token_to_id("<|AUDIO|>") == qwen_model.audio_token_id
    ids = tok.encode("Hello <|AUDIO|>")
    assert ids[-1] == qwen_model.audio_token_id
    assert tok.decode(ids, skip_special_tokens=True) == "Hello "
    assert [t[0] for t in tok.encode_with_offsets("Hello <|AUDIO|>")] == ids
    assert set(alto.models.AudioLanguageModel.model_types()) >= {"qwen2_audio", "voxtral"}


def test_voxtral_from_features(data):
    folder, io, _, atol = golden_model("voxtral-tiny-random")
    model = alto.models.AudioLanguageModel.from_pretrained(str(folder))
    assert model.model_type == "voxtral"
    inputs = {k: io[k] for k in ("input_ids", "attention_mask", "input_features")}
    logits, inter = model.logits(inputs, return_intermediates=True)
    assert max_abs(logits, io["logits"]) <= atol["logits"]
    assert max_abs(inter["multi_modal_projector"], io["audio_embeds"]) <= atol["audio_embeds"]
    out = model.generate(inputs, max_new_tokens=12)
    prompt = inputs["input_ids"].shape[1]
    assert torch.equal(out["generated_ids"], io["generated_ids"][:, prompt:])
    assert "text" not in out  # the folder ships no tekken.json
    with pytest.raises(alto.IoError, match="tekken.json"):
        model.tokenizer


def test_bad_input_is_named(qwen, qwen_model):
    folder, io, _, _ = qwen
    with pytest.raises(alto.InvalidArgument, match="input_ids"):
        qwen_model.logits({"attention_mask": io["attention_mask"]})
    with pytest.raises(alto.InvalidArgument, match="floating-point"):
        qwen_model.logits({"input_ids": io["input_ids"], "input_features": io["input_ids"]})
    with pytest.raises(alto.InvalidArgument, match="unknown content type 'video'"):
        qwen_model.process([{"role": "user", "content": [{"type": "video"}]}])
    with pytest.raises(alto.InvalidArgument, match="empty"):
        qwen_model.process([{"role": "user", "content": [{"type": "audio", "audio": torch.zeros(0)}]}])
    with pytest.raises(alto.IoError, match="missing.wav"):
        qwen_model.process([{"role": "user", "content": [{"type": "audio", "path": "missing.wav"}]}])
    with pytest.raises(alto.InvalidArgument, match="top_p"):
        qwen_model.generate({"input_ids": io["input_ids"][:, :5]}, top_p=2.0)
    with pytest.raises(alto.InvalidArgument, match="no_such_key"):
        qwen_model.generate({"input_ids": io["input_ids"][:, :5]}, no_such_key=1)
    with pytest.raises(alto.InvalidArgument, match="audio placeholder"):
        qwen_model.embed({"input_ids": io["input_ids"]})


def test_threads_share_one_model(qwen, qwen_model):
    _, io, metadata, _ = qwen
    inputs = {k: io[k] for k in json.loads(metadata["processor_output_keys"])}
    expected = qwen_model.logits(inputs)
    # Equal up to summation order: libtorch splits reductions by the threads free at the time.
    run_concurrently(lambda: torch.testing.assert_close(qwen_model.logits(inputs), expected,
                                                        rtol=0, atol=1e-5), threads=3)
