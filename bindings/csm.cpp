// models/csm: CSM text to speech with its parts (processor, embeddings, backbone steps, head,
// depth decoder) for layer-by-layer parity, and generation with audio handed out per frame.

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "alto/models/csm/csm.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using models::Csm;
using models::CsmGenerationConfig;
using models::CsmInputs;
using Model = std::shared_ptr<Csm>;

/// Backbone caches are mutated by forward(): one lock per state.
struct BackboneState {
  std::mutex mutex;
  models::TextDecoderState state;
};

py::dict inputs_dict(const CsmInputs& in) {
  py::dict d;
  d["prompt"] = in.prompt;
  d["input_ids"] = in.input_ids;
  py::list codes;
  for (const auto& c : in.context_codes) codes.append(c);
  d["context_codes"] = codes;
  return d;
}

CsmInputs inputs_of(const py::dict& inputs) {
  ALTO_CHECK(inputs.contains("input_ids"), "inputs: no \"input_ids\" (as process() returns)");
  CsmInputs in;
  in.input_ids =
      integral(py::cast<TensorArg>(inputs["input_ids"]).tensor, "inputs[\"input_ids\"]", 2);
  if (inputs.contains("context_codes"))
    for (const py::handle c : inputs["context_codes"])
      in.context_codes.push_back(
          integral(py::cast<TensorArg>(c).tensor, "inputs[\"context_codes\"]", 2));
  if (inputs.contains("prompt")) in.prompt = py::cast<std::string>(inputs["prompt"]);
  return in;
}

/// generate()'s keywords: the backbone's generation_config.json keys as they are, the depth
/// decoder's with their depth_decoder_ prefix; temperature also sets the depth decoder's.
CsmGenerationConfig generation_of(const Csm& model, std::optional<int64_t> max_frames,
                                  std::optional<double> temperature, const py::kwargs& kwargs) {
  CsmGenerationConfig config = model.generation_config();
  if (temperature) config.set_temperature(*temperature);
  py::kwargs backbone, depth;
  for (auto item : kwargs) {
    const std::string key = py::cast<std::string>(item.first);
    if (key.rfind("depth_decoder_", 0) == 0)
      depth[py::str(key.substr(14))] = item.second;
    else
      backbone[item.first] = item.second;
  }
  config.backbone = generation_config(config.backbone, backbone, "Csm.generate");
  config.depth_decoder = generation_config(config.depth_decoder, depth, "Csm.generate depth_decoder_");
  if (max_frames) config.backbone.max_new_tokens = *max_frames;
  config.validate();
  return config;
}

}  // namespace

void bind_csm(py::module_& m) {
  py::class_<BackboneState, std::shared_ptr<BackboneState>>(
      m, "CsmBackboneState", "The backbone's KV caches for one sequence (Csm.start makes one).")
      .def_property_readonly(
          "length", [](BackboneState& s) { return s.state.length(); }, "Positions fed so far.");

  py::class_<Csm, Model>(m, "Csm", R"doc(CSM text to speech (Sesame's csm-1b).

transformers' CsmForConditionalGeneration from its transformers-format folder::

    csm = alto.models.Csm.from_pretrained("csm-1b")
    out = csm.generate([{"role": "0", "content": [{"type": "text", "text": "Hello."}]}])
    out["audio"]        # float32 [samples] at 24 kHz
    out["audio_codes"]  # int64 [frames, num_codebooks]

Context turns carry their audio ({"type": "audio", "path" | "audio"}) or its codes
({"type": "codes", "codes"}). on_frame(index, codes, audio) sees each frame's 80 ms of audio as
soon as it exists. Parts for parity checks: process, embed, embed_frames, start / forward
(backbone, intermediates by layer), logits, decode_depth, decode.)doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::const_pointer_cast<Csm>(Csm::from_pretrained(dir, options));
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads config.json, model.safetensors (the decoders in `dtype` — \"int8\": int8 linear "
          "weights, float32 activations — the codec in float32), "
          "tokenizer.json and generation_config.json.")
      .def_property_readonly("sampling_rate", &Csm::sampling_rate, "The codec's rate (24000).")
      .def_property_readonly(
          "num_codebooks", [](const Csm& s) { return s.config().num_codebooks; },
          "Codebooks per frame.")
      .def_property_readonly(
          "generation_config",
          [](const Csm& s) {
            py::dict d = options_dict(
                models::GenerationConfig::schema().values(s.generation_config().backbone));
            for (const auto& [key, value] :
                 models::GenerationConfig::schema().values(s.generation_config().depth_decoder))
              d[py::str("depth_decoder_" + key)] = py_value(value);
            return d;
          },
          "generation_config.json's values for the backbone and (depth_decoder_*) the depth "
          "decoder: the defaults of generate().")
      .def(
          "process",
          [](const Csm& s, const py::list& conversation) {
            const auto messages = conversation_of(conversation, static_cast<int>(s.sampling_rate()));
            CsmInputs in;
            {
              py::gil_scoped_release release;
              in = s.process(messages);
            }
            return inputs_dict(in);
          },
          py::arg("conversation"),
          "The processor: {'prompt', 'input_ids' [1, T] with one <|AUDIO|> per context frame, "
          "'context_codes' [[num_codebooks, frames], ...]}.")
      .def(
          "embed",
          [](const Csm& s, const py::dict& inputs) {
            const CsmInputs in = inputs_of(inputs);
            py::gil_scoped_release release;
            return s.embed(in);
          },
          py::arg("inputs"), "inputs_embeds [1, T, hidden_size] handed to the backbone.")
      .def(
          "embed_frames",
          [](const Csm& s, const TensorArg& codes) {
            const torch::Tensor x = codes.tensor.to(torch::kInt64);
            py::gil_scoped_release release;
            return s.embed_frames(x);
          },
          py::arg("codes"), "codes [..., num_codebooks] -> summed embeddings [..., hidden_size].")
      .def(
          "start",
          [](const Csm& s, int64_t capacity) {
            auto state = std::make_shared<BackboneState>();
            state->state = s.start(capacity);
            return state;
          },
          py::arg("capacity"), "Empty backbone caches for up to `capacity` positions.")
      .def(
          "forward",
          [](const Csm& s, const TensorArg& embeds, BackboneState& state,
             bool intermediates) -> py::object {
            const torch::Tensor x = floating(embeds.tensor, "Csm.forward: inputs_embeds", 3, 3);
            models::Intermediates inter;
            torch::Tensor hidden;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(state.mutex);
              hidden = s.forward(x, state.state, intermediates ? &inter : nullptr);
            }
            if (!intermediates) return py::cast(hidden);
            return py::make_tuple(hidden, intermediates_dict(inter));
          },
          py::arg("inputs_embeds"), py::arg("state"), py::arg("intermediates") = false,
          "The backbone over inputs_embeds [1, T, hidden] after the state's positions -> final-"
          "norm hidden states (and {\"backbone_model.layers.N\": output} with intermediates).")
      .def(
          "logits",
          [](const Csm& s, const TensorArg& hidden) {
            const torch::Tensor x = floating(hidden.tensor, "Csm.logits: hidden");
            py::gil_scoped_release release;
            return s.logits(x);
          },
          py::arg("hidden"), "Codebook-0 logits float32 [..., vocab_size] (lm_head).")
      .def(
          "decode_depth",
          [](const Csm& s, const TensorArg& hidden, const TensorArg& first_codes, uint64_t seed,
             const py::kwargs& kwargs) {
            const torch::Tensor h =
                floating(hidden.tensor, "Csm.decode_depth: backbone_last_hidden_state", 2, 2);
            const torch::Tensor first =
                integral(first_codes.tensor, "Csm.decode_depth: first_codes", 1);
            const models::GenerationConfig config = generation_config(
                s.generation_config().depth_decoder, kwargs, "Csm.decode_depth");
            torch::Tensor codes, logits;
            {
              py::gil_scoped_release release;
              at::Generator generator = at::detail::createCPUGenerator(seed);
              codes = s.decode_depth(h, first, config, generator, &logits);
            }
            return py::make_tuple(codes, logits);
          },
          py::arg("backbone_last_hidden_state"), py::arg("first_codes"), py::arg("seed") = 0,
          "The depth decoder for one frame per row: ([B, hidden], codebook 0 [B]) -> (codes "
          "[B, num_codebooks], logits [B, num_codebooks - 1, vocab_size]); keywords override "
          "the depth decoder's generation settings (do_sample, temperature, top_k, ...).")
      .def(
          "generate",
          [](const Csm& s, const py::list& conversation, std::optional<int64_t> max_frames,
             std::optional<double> temperature, uint64_t seed, bool return_logits,
             bool decode_audio, const py::object& on_frame, const py::kwargs& kwargs) {
            const auto messages = conversation_of(conversation, static_cast<int>(s.sampling_rate()));
            CsmGenerationConfig config = generation_of(s, max_frames, temperature, kwargs);
            config.backbone.seed = seed;
            models::CsmGenerateOptions options;
            options.return_logits = return_logits;
            options.decode_audio = decode_audio;
            std::exception_ptr error;
            if (!on_frame.is_none())
              options.on_frame = [&](const models::CsmFrame& frame) {
                py::gil_scoped_acquire acquire;
                try {
                  const py::object r = on_frame(
                      frame.index, frame.codes,
                      frame.audio.defined() ? py::cast(frame.audio) : py::none());
                  return r.is_none() || py::cast<bool>(r);
                } catch (...) {
                  error = std::current_exception();
                  return false;
                }
              };
            models::CsmGeneration out;
            CsmInputs in;
            {
              py::gil_scoped_release release;
              in = s.process(messages);
              out = s.generate(in, config, options);
            }
            if (error) std::rethrow_exception(error);
            py::dict d = inputs_dict(in);
            d["audio_codes"] = out.audio_codes;
            d["audio"] = out.audio;
            d["frames"] = out.audio_codes.size(0);
            d["ended"] = out.ended;
            if (return_logits) {
              d["backbone_logits"] = out.backbone_logits;
              d["backbone_last_hidden_state"] = out.backbone_last_hidden_state;
              d["depth_decoder_logits"] = out.depth_decoder_logits;
            }
            d["prefill_seconds"] = out.prefill_seconds;
            d["time_to_first_audio_s"] = out.first_audio_seconds;
            d["frame_seconds"] = out.frame_seconds;
            return d;
          },
          py::arg("conversation"), py::arg("max_frames") = py::none(),
          py::arg("temperature") = py::none(), py::arg("seed") = 0,
          py::arg("return_logits") = false, py::arg("decode_audio") = true,
          py::arg("on_frame") = py::none(),
          "Processes the conversation and generates until the end frame or max_frames: "
          "{'audio_codes' [frames, K], 'audio' [samples], 'frames', 'ended', ...; with "
          "return_logits 'backbone_logits', 'backbone_last_hidden_state', "
          "'depth_decoder_logits'}. temperature (0: greedy) applies to both decoders; other "
          "keywords are generation_config.json keys (depth_decoder_* for the depth decoder). "
          "on_frame(index, codes, audio) runs as each frame exists; returning False stops.")
      .def(
          "decode",
          [](const Csm& s, const TensorArg& codes) {
            const torch::Tensor x = integral(codes.tensor, "Csm.decode: audio_codes", 2);
            py::gil_scoped_release release;
            return s.decode(x);
          },
          py::arg("audio_codes"),
          "Mimi's offline decode of the frames before the first all-eos one -> float32 [samples].");
}

}  // namespace alto::python
