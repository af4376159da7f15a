// models/: the audio LMs (Qwen2-Audio, Voxtral), their text decoder and generation. Processor
// outputs cross as dicts with transformers' key names, so a transformers processor's output can
// be handed to alto and alto's to transformers.

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/models/audio_language_model.h"
#include "alto/models/generation.h"
#include "alto/models/text_decoder.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using models::AudioLanguageModel;
using models::AudioLmInputs;
using models::GenerationConfig;
using models::TextDecoder;

/// A decoder state is mutated by every forward(): one lock per state keeps two threads that
/// share it from interleaving.
struct DecoderState {
  std::mutex mutex;
  models::TextDecoderState state;
};

/// Calls a Python on_token(row, token) from the generation loop (GIL released around it); an
/// exception it raises stops generation and is raised again by rethrow().
class TokenCallback {
 public:
  explicit TokenCallback(py::object callback) : callback_(std::move(callback)) {}

  models::TokenCallback function() {
    if (callback_.is_none()) return {};
    return [this](int64_t row, int64_t token) {
      py::gil_scoped_acquire acquire;
      try {
        const py::object result = callback_(row, token);
        return result.is_none() || py::cast<bool>(result);
      } catch (...) {
        error_ = std::current_exception();
        return false;
      }
    };
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  py::object callback_;
  std::exception_ptr error_;
};

py::dict result_dict(const models::GenerationResult& r) {
  py::dict d;
  d["generated_ids"] = r.generated_ids;
  if (r.logits.defined()) d["logits"] = r.logits;
  d["prefill_seconds"] = r.prefill_seconds;
  d["token_seconds"] = r.token_seconds;
  return d;
}

/// Runs generation with the GIL released and the Python callback's exception raised after.
template <typename Generate>
models::GenerationResult generate_with(Generate&& generate, bool return_logits,
                                       const py::object& on_token) {
  TokenCallback callback(on_token);
  models::GenerateOptions options;
  options.return_logits = return_logits;
  options.on_token = callback.function();
  models::GenerationResult result;
  {
    py::gil_scoped_release release;
    result = generate(options);
  }
  callback.rethrow();
  return result;
}

std::optional<torch::Tensor> optional_tensor(const py::object& inputs, const char* key) {
  if (!inputs.contains(key) || inputs[key].is_none()) return std::nullopt;
  try {
    return py::cast<TensorArg>(inputs[key]).tensor;
  } catch (const py::cast_error&) {
    throw InvalidArgument(std::string("inputs[\"") + key +
                          "\"]: expected a torch.Tensor or numpy.ndarray");
  }
}

/// Processor outputs from a mapping with transformers' keys (a dict from process(), or the
/// BatchFeature of transformers' processor).
AudioLmInputs inputs_of(const py::object& inputs) {
  // A tensor has __getitem__ and __contains__ too; ask for what process() returns.
  const py::object mapping = py::module_::import("collections.abc").attr("Mapping");
  ALTO_CHECK(py::isinstance(inputs, mapping),
             "inputs: expected a mapping with input_ids (as process() returns), got a ",
             py::str(py::type::of(inputs).attr("__name__")).cast<std::string>());
  const auto ids = optional_tensor(inputs, "input_ids");
  ALTO_CHECK(ids, "inputs: no \"input_ids\"");
  AudioLmInputs in;
  in.input_ids = integral(*ids, "inputs[\"input_ids\"]", 2);
  if (const auto mask = optional_tensor(inputs, "attention_mask"))
    in.attention_mask = integral(*mask, "inputs[\"attention_mask\"]", 2);
  if (const auto features = optional_tensor(inputs, "input_features")) {
    in.input_features = floating(*features, "inputs[\"input_features\"]", 3, 3);
    check_finite(in.input_features, "inputs[\"input_features\"]");
  }
  if (const auto mask = optional_tensor(inputs, "feature_attention_mask"))
    in.feature_attention_mask = integral(*mask, "inputs[\"feature_attention_mask\"]", 2);
  if (inputs.contains("prompt")) in.prompt = py::cast<std::string>(inputs["prompt"]);
  return in;
}

py::dict inputs_dict(const AudioLmInputs& in) {
  py::dict d;
  d["prompt"] = in.prompt;
  d["input_ids"] = in.input_ids;
  d["attention_mask"] = in.attention_mask;
  if (in.input_features.defined()) d["input_features"] = in.input_features;
  if (in.feature_attention_mask.defined())
    d["feature_attention_mask"] = in.feature_attention_mask;
  d["audio_tokens"] = in.audio_tokens;
  return d;
}

py::object with_intermediates(const torch::Tensor& value, bool requested,
                              const models::Intermediates& intermediates) {
  if (!requested) return py::cast(value);
  return py::make_tuple(value, intermediates_dict(intermediates));
}

using Model = std::shared_ptr<const AudioLanguageModel>;

/// A mono clip at `rate` from a content part: "audio" (array or tensor [samples], already at
/// the model's rate), or "path" / "audio_url" / "url" (a file, decoded and resampled).
torch::Tensor clip_of(const py::dict& part, int rate) {
  for (const char* key : {"path", "audio_url", "url"}) {
    if (!part.contains(key)) continue;
    const std::string path = py::cast<std::string>(part[key]);
    audio::DecodeOptions load;
    load.mono = true;
    load.sample_rate = rate;
    py::gil_scoped_release release;
    return audio::to_tensor(audio::load_audio(path, load))[0];
  }
  ALTO_CHECK(part.contains("audio"),
             "conversation: an audio part needs \"audio\" (samples at ", rate,
             " Hz) or \"path\" (a file)");
  return floating(py::cast<TensorArg>(part["audio"]).tensor, "conversation: audio part", 1, 1);
}

}  // namespace

GenerationConfig generation_config(GenerationConfig config, const py::kwargs& kwargs,
                                   const std::string& caller) {
  py::kwargs options;
  for (auto item : kwargs) {
    const std::string key = py::cast<std::string>(item.first);
    if (key != "eos_token_id") {
      options[item.first] = item.second;
      continue;
    }
    try {
      config.eos_token_id = py::isinstance<py::int_>(item.second)
                                ? std::vector<int64_t>{py::cast<int64_t>(item.second)}
                                : py::cast<std::vector<int64_t>>(item.second);
    } catch (const py::cast_error&) {
      throw InvalidArgument(caller + ": eos_token_id must be an int or a list of ints");
    }
  }
  GenerationConfig::schema().set(config, option_values(options, caller));
  config.validate();
  return config;
}

std::vector<models::ChatMessage> conversation_of(const py::list& conversation, int rate) {
  std::vector<models::ChatMessage> out;
  for (const py::handle item : conversation) {
    ALTO_CHECK(py::isinstance<py::dict>(item),
               "conversation: each message must be a dict with \"role\" and \"content\"");
    const py::dict message = py::reinterpret_borrow<py::dict>(item);
    ALTO_CHECK(message.contains("role") && message.contains("content"),
               "conversation: a message lacks \"role\" or \"content\"");
    models::ChatMessage m;
    m.role = py::cast<std::string>(message["role"]);
    const py::object content = message["content"];
    if (py::isinstance<py::str>(content)) {
      m.content.push_back(models::ChatPart::text_part(py::cast<std::string>(content)));
    } else {
      for (const py::handle p : content) {
        ALTO_CHECK(py::isinstance<py::dict>(p), "conversation: a content part must be a dict");
        const py::dict part = py::reinterpret_borrow<py::dict>(p);
        const std::string type =
            part.contains("type") ? py::cast<std::string>(part["type"]) : "text";
        if (type == "text")
          m.content.push_back(models::ChatPart::text_part(py::cast<std::string>(part["text"])));
        else if (type == "audio")
          m.content.push_back(models::ChatPart::audio_part(clip_of(part, rate)));
        else if (type == "codes" && part.contains("codes"))
          m.content.push_back(models::ChatPart::codes_part(integral(
              py::cast<TensorArg>(part["codes"]).tensor, "conversation: codes part", 2)));
        else
          throw InvalidArgument("conversation: unknown content type '" + type +
                                "' (text, audio, or codes with \"codes\")");
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

void bind_audio_language_models(py::module_& m) {
  py::class_<DecoderState, std::shared_ptr<DecoderState>>(
      m, "TextDecoderState",
      "The KV caches of a batch of rows (TextDecoder.start makes one; forward(..., state=...) "
      "appends to it).")
      .def_property_readonly(
          "length", [](DecoderState& s) { return s.state.length(); }, "Positions fed so far.")
      .def_property_readonly(
          "capacity", [](DecoderState& s) { return s.state.capacity(); },
          "Positions the caches hold at most.");

  py::class_<TextDecoder, std::shared_ptr<TextDecoder>>(
      m, "TextDecoder",
      R"doc(The Llama / Mistral / Qwen2 decoder-only transformer (transformers' *ForCausalLM).

Loads a *ForCausalLM folder, or comes from AudioLanguageModel.text_decoder. Immutable; the GIL
is released while it computes::

    dec = alto.models.TextDecoder.from_pretrained("Qwen2-0.5B")
    state = dec.start(1, 64)
    hidden = dec.forward(dec.embed(ids), state=state)      # cached: append more later
    logits = dec.logits(hidden[:, -1])
    out = dec.generate(ids, max_new_tokens=20)              # greedy unless do_sample=True)doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::const_pointer_cast<TextDecoder>(TextDecoder::from_pretrained(dir, options));
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads a *ForCausalLM folder (config.json with model_type llama, mistral or qwen2; "
          "model.safetensors or its sharded index). dtype: \"float32\", \"bfloat16\", or "
          "\"int8\" for int8 linear weights (one scale per output channel) with float32 "
          "activations. Raises alto.Error naming a missing or mis-shaped tensor.")
      .def_property_readonly(
          "config",
          [](const TextDecoder& d) {
            py::dict c = options_dict(models::TextDecoderConfig::schema().values(d.config()));
            c["model_type"] = d.config().model_type;
            return c;
          },
          "config.json's values (the family's transformers defaults for absent keys).")
      .def_property_readonly(
          "device", [](const TextDecoder& d) { return d.load_options().device.str(); },
          "The device the weights live on.")
      .def_property_readonly(
          "dtype", [](const TextDecoder& d) { return dtype_name(d.load_options().dtype); },
          "The compute dtype.")
      .def_property_readonly(
          "precision", [](const TextDecoder& d) { return d.load_options().precision(); },
          "The weights' precision as `dtype` was given: \"float32\", \"bfloat16\" or \"int8\" "
          "(int8 linear weights, float32 activations).")
      .def(
          "embed",
          [](const TextDecoder& d, const TensorArg& input_ids) {
            const torch::Tensor ids = integral(input_ids, "TextDecoder.embed: input_ids", 2);
            py::gil_scoped_release release;
            return d.embed(ids);
          },
          py::arg("input_ids"),
          "input_ids int [batch, T] -> embeddings [batch, T, hidden_size] in the model's dtype.")
      .def(
          "start",
          [](const TextDecoder& d, int64_t batch, int64_t capacity) {
            auto state = std::make_shared<DecoderState>();
            state->state = d.start(batch, capacity);
            return state;
          },
          py::arg("batch"), py::arg("capacity"),
          "Empty caches for `batch` rows of up to `capacity` positions (at most "
          "max_position_embeddings).")
      .def(
          "forward",
          [](const TextDecoder& d, const TensorArg& inputs_embeds,
             std::optional<TensorArg> attention_mask, std::shared_ptr<DecoderState> state,
             bool return_intermediates, bool attention_weights) {
            const torch::Tensor x =
                floating(inputs_embeds, "TextDecoder.forward: inputs_embeds", 3, 3);
            const torch::Tensor mask =
                attention_mask
                    ? integral(attention_mask->tensor, "TextDecoder.forward: attention_mask", 2)
                    : torch::Tensor();
            models::Intermediates intermediates;
            intermediates.attention_weights = attention_weights;
            torch::Tensor hidden;
            {
              py::gil_scoped_release release;
              auto* record = return_intermediates ? &intermediates : nullptr;
              if (state) {
                std::lock_guard<std::mutex> lock(state->mutex);
                hidden = d.forward(x, mask, state->state, record);
              } else {
                models::TextDecoderState fresh = d.start(x.size(0), x.size(1));
                hidden = d.forward(x, mask, fresh, record);
              }
            }
            return with_intermediates(hidden, return_intermediates, intermediates);
          },
          py::arg("inputs_embeds"), py::arg("attention_mask") = py::none(), py::kw_only(),
          py::arg("state") = py::none(), py::arg("return_intermediates") = false,
          py::arg("attention_weights") = false,
          R"doc(inputs_embeds [batch, T, hidden] -> final-norm hidden states [batch, T, hidden].

attention_mask [batch, T]: 1 real, 0 padding (left padding for batched prompts). Without state,
the whole sequence at once; with state=dec.start(...), appended to its caches (cached calls equal
one call on the whole sequence). return_intermediates=True returns (hidden, {name: tensor}) with
each layer's output under the checkpoint's names ("model.layers.N", "model.norm");
attention_weights=True adds "...self_attn.attn_weights".)doc")
      .def(
          "logits",
          [](const TextDecoder& d, const TensorArg& hidden) {
            const torch::Tensor h = floating(hidden, "TextDecoder.logits: hidden");
            py::gil_scoped_release release;
            return d.logits(h);
          },
          py::arg("hidden"), "hidden [..., hidden_size] -> logits [..., vocab_size] float32.")
      .def(
          "generate",
          [](const TextDecoder& d, std::optional<TensorArg> input_ids,
             std::optional<TensorArg> inputs_embeds, std::optional<TensorArg> attention_mask,
             bool return_logits, const py::object& on_token, const py::kwargs& kwargs) {
            ALTO_CHECK(input_ids || inputs_embeds,
                       "TextDecoder.generate: give input_ids, inputs_embeds or both");
            const torch::Tensor ids =
                input_ids ? integral(input_ids->tensor, "TextDecoder.generate: input_ids", 2)
                          : torch::Tensor();
            const torch::Tensor mask =
                attention_mask
                    ? integral(attention_mask->tensor, "TextDecoder.generate: attention_mask", 2)
                    : torch::Tensor();
            const torch::Tensor embeds =
                inputs_embeds
                    ? floating(inputs_embeds->tensor, "TextDecoder.generate: inputs_embeds", 3, 3)
                    : torch::Tensor();
            const GenerationConfig config =
                generation_config(GenerationConfig(), kwargs, "TextDecoder.generate");
            return result_dict(generate_with(
                [&](const models::GenerateOptions& options) {
                  return models::generate(d, embeds.defined() ? embeds : d.embed(ids), mask, ids,
                                          config, options);
                },
                return_logits, on_token));
          },
          py::arg("input_ids") = py::none(), py::kw_only(), py::arg("inputs_embeds") = py::none(),
          py::arg("attention_mask") = py::none(), py::arg("return_logits") = false,
          py::arg("on_token") = py::none(),
          R"doc(Generates after a prompt, as transformers' generate().

input_ids int [batch, T] and/or inputs_embeds [batch, T, hidden] (ids are the repetition
penalty's history); attention_mask for left-padded batches. Keyword arguments are
generation_config.json keys (max_new_tokens, do_sample, temperature, top_k, top_p, min_p,
repetition_penalty, eos_token_id, pad_token_id, seed); absent ones keep transformers' defaults.
on_token(row, token) is called as each token is chosen; returning False stops. Returns
{"generated_ids": int64 [batch, new], "logits" ([steps, batch, vocab] with return_logits),
"prefill_seconds", "token_seconds"}.)doc");

  py::class_<AudioLanguageModel, std::shared_ptr<AudioLanguageModel>>(
      m, "AudioLanguageModel",
      R"doc(An encoder-based audio LM (Qwen2-Audio, Voxtral) from its Hub folder.

The processor, encoder, projector, text decoder and generation of transformers'
*ForConditionalGeneration. Immutable and safe to share between threads::

    lm = alto.models.AudioLanguageModel.from_pretrained("Qwen2-Audio-7B-Instruct")
    inputs = lm.process([{"role": "user", "content": [
        {"type": "audio", "path": "speech.wav"},
        {"type": "text", "text": "What does the person say?"}]}])
    out = lm.generate(inputs, max_new_tokens=64)
    lm.tokenizer.decode(out["generated_ids"][0], skip_special_tokens=True)

With your own backbone, stop at embed(): the expanded input_ids, the projected audio
embeddings and the positions they go to. process() returns transformers' processor keys, and
embed/logits/generate also take a transformers processor's output.)doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::const_pointer_cast<AudioLanguageModel>(
                AudioLanguageModel::from_pretrained(dir, options));
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads the architecture config.json's model_type names (qwen2_audio, voxtral): "
          "weights in the Hub's or transformers 5's names, features from "
          "preprocessor_config.json or processor_config.json, tokenizer.json or tekken.json, "
          "generation_config.json. Raises alto.Error naming what is missing or inconsistent.")
      .def_static(
          "model_types",
          [] { return registry_descriptions(models::audio_language_models()); },
          "The registered architectures: {model_type: description}.")
      .def_property_readonly("model_type", &AudioLanguageModel::model_type,
                             "config.json's model_type.")
      .def_property_readonly("sampling_rate", &AudioLanguageModel::sampling_rate,
                             "The rate audio parts must have (16000).")
      .def_property_readonly("audio_token_id", &AudioLanguageModel::audio_token_id,
                             "The id of the audio placeholder token.")
      .def_property_readonly(
          "device", [](const AudioLanguageModel& lm) { return lm.load_options().device.str(); },
          "The device the weights live on.")
      .def_property_readonly(
          "dtype",
          [](const AudioLanguageModel& lm) { return dtype_name(lm.load_options().dtype); },
          "The compute dtype.")
      .def_property_readonly(
          "precision", [](const AudioLanguageModel& lm) { return lm.load_options().precision(); },
          "The text decoder's weights as `dtype` was given: \"float32\", \"bfloat16\" or "
          "\"int8\" (int8 linear weights, float32 activations; the encoder stays float32).")
      .def_property_readonly(
          "generation_config",
          [](const AudioLanguageModel& lm) {
            py::dict d = options_dict(GenerationConfig::schema().values(lm.generation_config()));
            d["eos_token_id"] = lm.generation_config().eos_token_id;
            return d;
          },
          "generation_config.json's values, the defaults of generate().")
      .def_property_readonly(
          "text_decoder",
          [](const Model& lm) {
            // Shares the model's ownership: the decoder lives as long as either.
            return std::shared_ptr<TextDecoder>(
                lm, const_cast<TextDecoder*>(&lm->text_decoder()));
          },
          "The text backbone as a TextDecoder (same weights).")
      .def_property_readonly(
          "tokenizer",
          [](const Model& lm) {
            const tokenizers::TextTokenizer& t = lm->tokenizer();
            return std::shared_ptr<tokenizers::TextTokenizer>(
                lm, const_cast<tokenizers::TextTokenizer*>(&t));
          },
          "The folder's text tokenizer; alto.IoError when it ships none.")
      .def(
          "process",
          [](const AudioLanguageModel& lm, const py::list& conversation,
             bool add_generation_prompt) {
            const auto messages = conversation_of(conversation, lm.sampling_rate());
            AudioLmInputs in;
            {
              py::gil_scoped_release release;
              in = lm.process(messages, add_generation_prompt);
            }
            return inputs_dict(in);
          },
          py::arg("conversation"), py::arg("add_generation_prompt") = true,
          R"doc(The model's processor and chat template over a conversation.

conversation: [{"role": "system" | "user" | "assistant", "content": str or [{"type": "text",
"text": str} | {"type": "audio", "audio": float [samples] at sampling_rate} | {"type": "audio",
"path": file (any format, resampled)}]}]. Returns {"prompt", "input_ids" [1, T] (placeholders
expanded), "attention_mask", "input_features", "feature_attention_mask" (Qwen2-Audio),
"audio_tokens" (placeholders per audio part)}.)doc")
      .def(
          "transcription_inputs",
          [](const AudioLanguageModel& lm, const TensorArg& wave,
             std::optional<std::string> language) {
            const torch::Tensor x =
                floating(wave, "AudioLanguageModel.transcription_inputs: wave", 1, 1);
            AudioLmInputs in;
            {
              py::gil_scoped_release release;
              in = lm.transcription_inputs(x, language.value_or(""));
            }
            return inputs_dict(in);
          },
          py::arg("wave"), py::arg("language") = py::none(),
          "The model's transcription request for a mono clip at sampling_rate (language: an "
          "ISO code, or None to let the model detect it), as process() returns it.")
      .def(
          "embed",
          [](const AudioLanguageModel& lm, const py::object& inputs, bool return_intermediates,
             bool attention_weights) {
            const AudioLmInputs in = inputs_of(inputs);
            models::Intermediates intermediates;
            intermediates.attention_weights = attention_weights;
            models::AudioLmEmbeddings e;
            {
              py::gil_scoped_release release;
              e = lm.embed(in, return_intermediates ? &intermediates : nullptr);
            }
            py::dict d;
            d["input_ids"] = e.input_ids;
            d["audio_positions"] = e.audio_positions;
            d["audio_embeds"] = e.audio_embeds;
            d["inputs_embeds"] = e.inputs_embeds;
            if (return_intermediates) d["intermediates"] = intermediates_dict(intermediates);
            return d;
          },
          py::arg("inputs"), py::arg("return_intermediates") = false,
          py::arg("attention_weights") = false,
          R"doc(For your own backbone: {"input_ids" [1, T], "audio_positions" [n] (where each audio
row goes in input_ids), "audio_embeds" [n, hidden] float32, "inputs_embeds" [1, T, hidden] (the
text embeddings with the audio rows scattered in)}. return_intermediates adds "intermediates":
the encoder's and projector's outputs under the checkpoint's names.)doc")
      .def(
          "logits",
          [](const AudioLanguageModel& lm, const py::object& inputs, bool return_intermediates,
             bool attention_weights) {
            const AudioLmInputs in = inputs_of(inputs);
            models::Intermediates intermediates;
            intermediates.attention_weights = attention_weights;
            torch::Tensor logits;
            {
              py::gil_scoped_release release;
              logits = lm.logits(in, return_intermediates ? &intermediates : nullptr);
            }
            return with_intermediates(logits, return_intermediates, intermediates);
          },
          py::arg("inputs"), py::arg("return_intermediates") = false,
          py::arg("attention_weights") = false,
          R"doc(Logits [1, T, vocab_size] float32 of every prompt position (model(**inputs).logits).

return_intermediates=True returns (logits, {name: tensor}) in forward order: the encoder
("audio_tower.conv1", "audio_tower.layers.N", "audio_tower.layer_norm", "last_hidden_state"),
"multi_modal_projector", "inputs_embeds", each decoder layer ("language_model.model.layers.N",
under the checkpoint's prefix), the final norm and "logits".)doc")
      .def(
          "generate",
          [](const AudioLanguageModel& lm, const py::object& inputs, bool return_logits,
             const py::object& on_token, const py::kwargs& kwargs) {
            const AudioLmInputs in = inputs_of(inputs);
            const GenerationConfig config =
                generation_config(lm.generation_config(), kwargs, "AudioLanguageModel.generate");
            const models::GenerationResult r = generate_with(
                [&](const models::GenerateOptions& options) {
                  return lm.generate(in, config, options);
                },
                return_logits, on_token);
            py::dict d = result_dict(r);
            if (lm.has_tokenizer()) {
              const torch::Tensor ids = r.generated_ids[0].contiguous();
              d["text"] = lm.tokenizer().decode(
                  std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel()),
                  /*skip_special_tokens=*/true);
            }
            return d;
          },
          py::arg("inputs"), py::kw_only(), py::arg("return_logits") = false,
          py::arg("on_token") = py::none(),
          R"doc(The model's reply, as transformers' generate() from generation_config.json.

Keyword arguments override generation_config.json's keys (max_new_tokens, do_sample,
temperature, top_k, top_p, min_p, repetition_penalty, eos_token_id, seed). on_token(row, token)
is called as each token is chosen (return False to stop). Returns {"generated_ids" int64
[1, new], "text" (when the folder has a tokenizer), "logits" (with return_logits),
"prefill_seconds", "token_seconds"}.)doc")
      .def("__repr__", [](const AudioLanguageModel& lm) {
        return "AudioLanguageModel(" + lm.model_type() + ", " + lm.load_options().to_string() +
               ")";
      });
}

}  // namespace alto::python
