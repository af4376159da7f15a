"""alto.models.Csm against transformers 5.17's CSM golden folder: processor, embeddings, prompt
logits with the backbone's named intermediates, greedy generation (codes, per-step backbone and
depth-decoder logits, audio) with and without a context clip, audio handed out per frame, and
errors that name the cause."""

import pytest
import torch

import alto

from conftest import golden_model, max_abs


@pytest.fixture(scope="module")
def golden():
    folder, tensors, _, atol = golden_model("csm-tiny-random")
    return folder, tensors, atol


@pytest.fixture(scope="module")
def csm(golden):
    return alto.models.Csm.from_pretrained(str(golden[0]))


def conversation(golden, context):
    turn = {"role": "0", "content": [{"type": "text", "text": "Hello from a tiny model."}]}
    if not context:
        return [turn]
    clip = {"type": "audio", "path": str(golden[0] / "input.wav")}
    return [{"role": "0", "content": [{"type": "text", "text": "This is the context sentence."}, clip]},
            turn]


@pytest.mark.parametrize("prefix", ["", "ctx_"])
def test_prompt_and_logits_equal_transformers(golden, csm, prefix):
    _, io, atol = golden
    inputs = csm.process(conversation(golden, prefix == "ctx_"))
    assert torch.equal(inputs["input_ids"], io[prefix + "input_ids"])
    if prefix:
        assert torch.equal(inputs["context_codes"][0].unsqueeze(0), io["ctx_context_audio_codes"])
    embeds = csm.embed(inputs)
    assert max_abs(embeds, io[prefix + "inputs_embeds"]) <= atol[prefix + "inputs_embeds"]
    state = csm.start(embeds.shape[1])
    hidden, layers = csm.forward(embeds, state, intermediates=True)
    assert list(layers) == ["backbone_model.layers.0", "backbone_model.layers.1", "backbone_model.norm"]
    assert max_abs(csm.logits(hidden), io[prefix + "prompt_logits"]) <= atol[prefix + "prompt_logits"]
    assert state.length == embeds.shape[1]


@pytest.mark.parametrize("prefix", ["", "ctx_"])
def test_greedy_generation_equals_transformers(golden, csm, prefix):
    _, io, atol = golden
    frames = []
    out = csm.generate(conversation(golden, prefix == "ctx_"), max_frames=6, return_logits=True,
                       on_frame=lambda i, codes, audio: frames.append((i, codes, audio)))
    assert torch.equal(out["audio_codes"], io[prefix + "audio_codes"][0])
    for key, name in [("backbone_logits", "backbone_step_logits"),
                      ("backbone_last_hidden_state", "backbone_last_hidden_state"),
                      ("depth_decoder_logits", "depth_decoder_logits"),
                      ("audio", "audio_values")]:
        assert max_abs(out[key], io[prefix + name]) <= atol[prefix + name], key
    # Audio per frame as generated: 1920 samples each, together the whole output.
    assert [i for i, _, _ in frames] == list(range(6))
    assert torch.equal(torch.cat([a for _, _, a in frames]), out["audio"])
    assert max_abs(csm.decode(out["audio_codes"]), out["audio"]) <= 1e-5
    # The depth decoder alone, from the backbone's hidden state and codebook 0.
    codes, logits = csm.decode_depth(out["backbone_last_hidden_state"], out["audio_codes"][:, 0])
    assert torch.equal(codes, out["audio_codes"])
    assert max_abs(logits, io[prefix + "depth_decoder_logits"]) <= atol[prefix + "depth_decoder_logits"]


def test_sampling_is_seeded_and_codes_context(golden, csm):
    # Sampled freely the random model also draws non-code ids (pad), which no codec decodes.
    sampled = dict(max_frames=4, temperature=1.2, top_k=0, depth_decoder_top_k=0, seed=3)
    with pytest.raises(alto.Error, match="not a codec code"):
        csm.generate(conversation(golden, False), **sampled)
    first = csm.generate(conversation(golden, False), decode_audio=False, **sampled)
    again = csm.generate(conversation(golden, False), decode_audio=False, **sampled)
    assert torch.equal(first["audio_codes"], again["audio_codes"])
    assert first["audio"].numel() == 0
    stopped = csm.generate(conversation(golden, False), max_frames=6, on_frame=lambda i, c, a: i < 1)
    assert stopped["frames"] == 2
    # A context given as codes is the context given as audio.
    with_audio = csm.process(conversation(golden, True))
    codes_turn = [{"role": "0", "content": [{"type": "text", "text": "This is the context sentence."},
                                            {"type": "codes", "codes": with_audio["context_codes"][0]}]},
                  conversation(golden, False)[0]]
    assert torch.equal(csm.process(codes_turn)["input_ids"], with_audio["input_ids"])


def test_bad_input_names_the_cause(golden, csm):
    with pytest.raises(alto.Error, match="the text is empty"):
        csm.process([{"role": "0", "content": ""}])
    with pytest.raises(alto.Error, match="non-negative decimal integer"):
        csm.process([{"role": "speaker", "content": "hi"}])
    bad = torch.full((4, 3), 70, dtype=torch.int64)
    with pytest.raises(alto.Error, match="code 70 is outside the codec's codebooks"):
        csm.process([{"role": "0", "content": [{"type": "text", "text": "a"}, {"type": "codes", "codes": bad}]}])

    def fails(i, codes, audio):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        csm.generate(conversation(golden, False), max_frames=3, on_frame=fails)
