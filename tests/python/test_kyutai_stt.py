"""alto.models.KyutaiSpeechToText, SpeechToTextStream and SpeechToTextBatch against transformers
5.17's Kyutai STT golden folder: processor, Mimi codes, embeddings, teacher-forced logits with
named intermediates, the decoder stepped on the codes generate fed it; streams equal offline."""

import pytest
import torch

import alto

from conftest import golden_model, max_abs


@pytest.fixture(scope="module")
def golden():
    folder, tensors, _, atol = golden_model("kyutai-stt-tiny-random")
    return folder, tensors, atol


@pytest.fixture(scope="module")
def stt(golden):
    return alto.models.KyutaiSpeechToText.from_pretrained(str(golden[0]))


@pytest.fixture(scope="module")
def wave(golden):
    samples, rate = alto.load_audio(str(golden[0] / "input.wav"))
    assert rate == 24000
    return samples[0]


def test_parts_equal_transformers(golden, stt, wave):
    _, io, atol = golden
    inputs = stt.process(wave)
    assert torch.equal(inputs["input_values"], io["input_values"])
    assert torch.equal(inputs["padding_mask"], io["padding_mask"])
    assert torch.equal(stt.encode(inputs["input_values"]), io["audio_codes_offline"])
    embeds = stt.embed(io["prefill_input_ids"])
    assert max_abs(embeds, io["prefill_inputs_embeds"]) <= atol["prefill_inputs_embeds"]
    state = stt.start(1)
    hidden, layers = stt.forward(embeds, state, intermediates=True)
    assert list(layers) == ["model.layers.0", "model.layers.1", "model.norm"]
    assert max_abs(stt.logits(hidden), io["prefill_logits"]) <= atol["prefill_logits"]
    assert state.positions.tolist() == [io["prefill_input_ids"].shape[1]]


def test_decoder_on_generates_codes(golden, stt):
    _, io, atol = golden
    out = stt.transcribe_codes(io["audio_codes"], return_logits=True)
    assert max_abs(out["logits"], io["generated_logits"]) <= atol["generated_logits"]
    assert out["token_ids"] == io["generated_ids"][0, 1:].tolist()


@pytest.mark.parametrize("chunk", [1919, 24000 * 7])
def test_stream_equals_offline(stt, wave, chunk):
    offline = stt.transcribe(wave)
    stream = alto.models.SpeechToTextStream(stt)
    words = []
    for at in range(0, wave.shape[0], chunk):
        words += stream.accept_waveform(24000, wave[at:at + chunk])
    words += stream.input_finished()
    assert stream.transcript() == offline
    assert [w["word"] for w in words] == [w["word"] for w in offline["words"]]


def test_batch_equals_alone(stt, wave):
    batch = alto.models.SpeechToTextBatch(stt, slots=3)
    a, b = batch.open(), batch.open()
    batch.accept_waveform(a, 24000, wave)
    batch.accept_waveform(b, 24000, wave[:30000].numpy())
    batch.input_finished(b)
    batch.step()
    batch.input_finished(a)
    batch.run()
    assert batch.done(a) and batch.done(b)
    assert batch.transcript(a) == stt.transcribe(wave)
    assert batch.transcript(b) == stt.transcribe(wave[:30000])


def test_bad_input(stt):
    stream = alto.models.SpeechToTextStream(stt)
    with pytest.raises(alto.InvalidArgument, match="16000 Hz, the model takes 24000 Hz"):
        stream.accept_waveform(16000, torch.zeros(100))
    with pytest.raises(alto.InvalidArgument, match="NaN"):
        stream.accept_waveform(24000, torch.full((10,), float("nan")))
    stream.input_finished()
    with pytest.raises(alto.InvalidArgument, match="after input_finished"):
        stream.accept_waveform(24000, torch.zeros(10))
    batch = alto.models.SpeechToTextBatch(stt, slots=1)
    with pytest.raises(alto.InvalidArgument, match="slot 3 does not exist"):
        batch.step() or batch.accept_waveform(3, 24000, torch.zeros(10))
