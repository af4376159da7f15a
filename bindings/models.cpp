// models/: Whisper (encode with named intermediates, cached decode, generate, transcribe) and
// the AudioEncoder registry; the audio LMs are in audio_language_model.cpp.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/error.h"
#include "alto/features/feature_extractor.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/audio_encoder.h"
#include "alto/models/whisper/decoding.h"
#include "alto/models/whisper/transcriber.h"
#include "alto/models/whisper/whisper.h"
#include "alto/tokenizers/bpe_tokenizer.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using models::Intermediates;
using models::Whisper;
using models::WhisperDecoderState;

/// A decoder state is mutated by every decode(): one lock per state keeps two threads that
/// share it from interleaving (distinct states run concurrently).
struct DecoderState {
  std::mutex mutex;
  WhisperDecoderState state;
};

/// The model plus what generate() and transcribe() need beside it, built on first use. The
/// model itself is immutable; the lazily built parts are guarded by one lock.
class PyWhisper {
 public:
  PyWhisper(std::string dir, const alto::LoadOptions& options)
      : dir_(std::move(dir)), model_(*Whisper::from_pretrained(dir_, options)) {}

  const Whisper& model() const { return model_; }

  torch::Tensor checked_features(const torch::Tensor& features) const {
    torch::Tensor x = floating(features, "Whisper.encode: input_features", 2, 3);
    if (x.dim() == 2) x = x.unsqueeze(0);
    check_finite(x, "Whisper.encode: input_features");
    return x;
  }

  const models::WhisperDecoder& decoder() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!decoder_) {
      decoder_ = std::make_unique<models::WhisperDecoder>(
          model_, models::WhisperSpecialTokens::for_vocab_size(model_.config().vocab_size),
          models::WhisperGenerationConfig::from_json(dir_));
    }
    return *decoder_;
  }

  const models::WhisperTranscriber& transcriber(const std::string& tokenizer) {
    const std::string source = tokenizer.empty() ? dir_ : tokenizer;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = transcribers_.find(source);
    if (it == transcribers_.end()) {
      auto extractor = features::FeatureExtractor::from_pretrained(dir_);
      const auto* whisper = dynamic_cast<const features::WhisperFeatureExtractor*>(extractor.get());
      ALTO_CHECK(whisper, dir_,
                 "/preprocessor_config.json: expected a WhisperFeatureExtractor, got ",
                 extractor->name());
      it = transcribers_
               .emplace(source,
                        std::make_unique<models::WhisperTranscriber>(
                            model_, *whisper, *tokenizers::BpeTokenizer::from_pretrained(source),
                            models::WhisperGenerationConfig::from_json(dir_)))
               .first;
    }
    return *it->second;
  }

 private:
  std::string dir_;
  Whisper model_;
  std::mutex mutex_;
  std::unique_ptr<models::WhisperDecoder> decoder_;
  std::map<std::string, std::unique_ptr<models::WhisperTranscriber>> transcribers_;
};

py::dict config_dict(const models::WhisperConfig& c) {
  return options_dict(models::WhisperConfig::schema().values(c));
}

models::WhisperDecodingOptions decoding_options(
    const std::optional<std::string>& language, const std::string& task, bool timestamps,
    int beam_size, double patience, std::optional<double> length_penalty, double temperature,
    int best_of, uint64_t seed, int64_t max_new_tokens, const std::vector<int64_t>& prompt,
    bool suppress_blank, bool suppress_tokens) {
  models::WhisperDecodingOptions o;
  o.task = task;
  o.language = language.value_or("");
  o.timestamps = timestamps;
  o.beam_size = beam_size;
  o.patience = patience;
  o.length_penalty = length_penalty;
  o.temperature = temperature;
  o.best_of = best_of;
  o.seed = seed;
  o.sample_len = max_new_tokens;
  o.prompt = prompt;
  o.suppress_blank = suppress_blank;
  o.suppress_tokens = suppress_tokens;
  o.validate();
  return o;
}

py::dict segment_dict(const models::WhisperSegment& s) {
  py::dict d;
  d["start"] = s.start;
  d["end"] = s.end;
  d["text"] = s.text;
  d["tokens"] = s.tokens;
  d["temperature"] = s.temperature;
  d["avg_logprob"] = s.avg_logprob;
  d["compression_ratio"] = s.compression_ratio;
  d["no_speech_prob"] = s.no_speech_prob;
  return d;
}

}  // namespace

py::dict intermediates_dict(const Intermediates& intermediates) {
  py::dict d;
  for (const auto& [name, tensor] : intermediates.tensors) d[py::str(name)] = tensor;
  return d;
}

void bind_models(py::module_& top) {
  py::module_ m = submodule(top, "models", "alto's models, loaded from Hugging Face checkpoints.");
  bind_audio_language_models(m);
  bind_speech_to_text(m);
  bind_csm(m);

  py::class_<DecoderState, std::shared_ptr<DecoderState>>(
      m, "WhisperDecoderState",
      "The decoder's KV cache for a batch of token rows (Whisper.start makes one; "
      "Whisper.decode(tokens, state=...) appends to it). Rows come in groups of rows_per_audio "
      "sharing one audio window (beam search).")
      .def_property_readonly(
          "length", [](DecoderState& s) { return s.state.length(); },
          "Tokens in the self-attention cache.")
      .def_property_readonly(
          "rows", [](DecoderState& s) { return s.state.rows(); }, "Token rows.")
      .def_property_readonly(
          "rows_per_audio", [](DecoderState& s) { return s.state.rows_per_audio; },
          "Rows per audio window.")
      .def(
          "select_rows",
          [](DecoderState& s, const TensorArg& rows) {
            const torch::Tensor r =
                integral(rows.tensor, "WhisperDecoderState.select_rows: rows", 1);
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(s.mutex);
            s.state.select_rows(r);
          },
          py::arg("rows"),
          "Keeps rows ``rows`` (int [n]) in that order, as beam search reorders hypotheses.");

  py::class_<PyWhisper, std::shared_ptr<PyWhisper>>(
      m, "Whisper",
      R"doc(Whisper's encoder and decoder (transformers' WhisperForConditionalGeneration).

Loads a Hub checkpoint folder unchanged (config.json + model.safetensors). The model is immutable
and may be used from several threads at once; the GIL is released while it computes::

    w = alto.models.Whisper.from_pretrained("whisper-tiny")
    h = w.encode(feats["input_features"])                 # [1, 1500, d_model]
    inter = w.encode(feats["input_features"], return_intermediates=True)
    inter["model.encoder.layers.0"], inter["last_hidden_state"]

Intermediate names are the checkpoint's parameter prefixes of the module that produced them,
so they line up with register_forward_hook outputs on the Hugging Face model.)doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = alto::LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::make_shared<PyWhisper>(dir, options);
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads ``dir`` (config.json, model.safetensors or a sharded index). device: \"cpu\", "
          "\"cuda\", \"cuda:N\"; dtype: \"float32\", \"float16\", \"bfloat16\", or \"int8\" "
          "(int8 linear weights in the decoder, float32 activations; the encoder stays "
          "float32). Raises alto.Error listing every missing, unexpected or mis-shaped tensor.")
      .def_property_readonly(
          "config", [](const PyWhisper& w) { return config_dict(w.model().config()); },
          "config.json's values (transformers' defaults for absent keys).")
      .def_property_readonly(
          "device", [](const PyWhisper& w) { return w.model().load_options().device.str(); },
          "The device the weights live on.")
      .def_property_readonly(
          "dtype",
          [](const PyWhisper& w) { return alto::dtype_name(w.model().load_options().dtype); },
          "The compute dtype.")
      .def_property_readonly(
          "precision", [](const PyWhisper& w) { return w.model().load_options().precision(); },
          "The weights' precision as `dtype` was given: \"float32\", \"float16\", "
          "\"bfloat16\" or \"int8\" (int8 linear weights in the decoder).")
      .def(
          "encode",
          [](const PyWhisper& w, const TensorArg& input_features, bool return_intermediates,
             bool attention_weights) -> py::object {
            const torch::Tensor x = w.checked_features(input_features);
            Intermediates intermediates;
            intermediates.attention_weights = attention_weights;
            torch::Tensor hidden;
            {
              py::gil_scoped_release release;
              hidden = w.model().encode(x, return_intermediates ? &intermediates : nullptr);
            }
            if (!return_intermediates) return py::cast(hidden);
            return intermediates_dict(intermediates);
          },
          py::arg("input_features"), py::arg("return_intermediates") = false,
          py::arg("attention_weights") = false,
          R"doc(input_features: [batch, num_mel_bins, 3000] (or [num_mel_bins, 3000]) log-mel
-> last_hidden_state [batch, 1500, d_model] in the model's dtype.

With return_intermediates=True, a dict {name: tensor} of every module's output in the order the
forward pass made them: "model.encoder.conv1", "model.encoder.conv2" (each module's output as a
register_forward_hook sees it, so before the GELU),
"model.encoder.layers.N.self_attn", "model.encoder.layers.N", "model.encoder.layer_norm" and
"last_hidden_state"; attention_weights=True adds "...self_attn.attn_weights" [B, H, T, S].
Raises alto.InvalidArgument for a wrong dtype, shape or NaN input.)doc")
      .def(
          "start",
          [](const PyWhisper& w, const TensorArg& encoder_hidden_states, int64_t rows_per_audio) {
            const torch::Tensor h =
                floating(encoder_hidden_states, "Whisper.start: encoder_hidden_states", 3, 3);
            auto state = std::make_shared<DecoderState>();
            py::gil_scoped_release release;
            state->state = w.model().start(h, rows_per_audio);
            return state;
          },
          py::arg("encoder_hidden_states"), py::arg("rows_per_audio") = 1,
          "A fresh decoder state for encoder_hidden_states [audios, frames, d_model] with "
          "rows_per_audio token rows per audio.")
      .def(
          "decode",
          [](const PyWhisper& w, const TensorArg& tokens,
             std::optional<TensorArg> encoder_hidden_states, std::shared_ptr<DecoderState> state,
             bool return_intermediates, bool attention_weights) -> py::object {
            const torch::Tensor ids = integral(tokens.tensor, "Whisper.decode: tokens", 2);
            ALTO_CHECK(static_cast<bool>(state) != encoder_hidden_states.has_value(),
                       "Whisper.decode: pass exactly one of encoder_hidden_states (decode the "
                       "tokens from scratch) and state (append them to its cache)");
            torch::Tensor hidden;
            if (encoder_hidden_states) {
              hidden = floating(encoder_hidden_states->tensor,
                                "Whisper.decode: encoder_hidden_states", 3, 3);
              ALTO_CHECK(hidden.size(0) > 0 && ids.size(0) % hidden.size(0) == 0,
                         "Whisper.decode: tokens has ", ids.size(0),
                         " rows, not a multiple of the ", hidden.size(0), " audios");
            }
            Intermediates intermediates;
            intermediates.attention_weights = attention_weights;
            torch::Tensor logits;
            {
              py::gil_scoped_release release;
              if (state) {
                std::lock_guard<std::mutex> lock(state->mutex);
                logits = w.model().decode(ids, state->state,
                                          return_intermediates ? &intermediates : nullptr);
              } else {
                WhisperDecoderState fresh = w.model().start(hidden, ids.size(0) / hidden.size(0));
                logits =
                    w.model().decode(ids, fresh, return_intermediates ? &intermediates : nullptr);
              }
            }
            if (!return_intermediates) return py::cast(logits);
            return py::make_tuple(logits, intermediates_dict(intermediates));
          },
          py::arg("tokens"), py::kw_only(), py::arg("encoder_hidden_states") = py::none(),
          py::arg("state") = py::none(), py::arg("return_intermediates") = false,
          py::arg("attention_weights") = false,
          R"doc(Decoder logits for int tokens [rows, new] -> float32 [rows, new, vocab_size].

Either encoder_hidden_states=[audios, frames, d_model] (the whole prefix at once, as
transformers' model(encoder_outputs=..., decoder_input_ids=tokens)), or state=w.start(...) to
append the tokens to its KV cache (cached decoding equals feeding the whole prefix). With
return_intermediates=True returns (logits, {name: tensor}) with "model.decoder.embeddings",
"model.decoder.layers.N", ..., "proj_out".)doc")
      .def(
          "detect_language",
          [](PyWhisper& w, const TensorArg& input_features) {
            const torch::Tensor x = w.checked_features(input_features);
            ALTO_CHECK(x.size(0) == 1, "Whisper.detect_language: one window at a time, got batch ",
                       x.size(0));
            const models::WhisperDecoder& decoder = w.decoder();
            py::gil_scoped_release release;
            return decoder.detect_language(w.model().encode(x));
          },
          py::arg("input_features"),
          "Language probabilities {code: p} (summing to 1) for one window's input_features "
          "[1, num_mel_bins, 3000].")
      .def(
          "generate",
          [](PyWhisper& w, const TensorArg& input_features, std::optional<std::string> language,
             const std::string& task, bool timestamps, int beam_size, double patience,
             std::optional<double> length_penalty, double temperature, int best_of, uint64_t seed,
             int64_t max_new_tokens, const std::vector<int64_t>& prompt, bool suppress_blank,
             bool suppress_tokens) {
            const torch::Tensor x = w.checked_features(input_features);
            ALTO_CHECK(x.size(0) == 1, "Whisper.generate: one window at a time, got batch ",
                       x.size(0));
            const auto options = decoding_options(
                language, task, timestamps, beam_size, patience, length_penalty, temperature,
                best_of, seed, max_new_tokens, prompt, suppress_blank, suppress_tokens);
            const models::WhisperDecoder& decoder = w.decoder();
            models::WhisperDecodingResult r;
            {
              py::gil_scoped_release release;
              r = decoder.decode(w.model().encode(x), options);
            }
            py::dict d;
            d["tokens"] = r.tokens;
            d["language"] = r.language;
            d["sum_logprob"] = r.sum_logprob;
            d["avg_logprob"] = r.avg_logprob;
            d["no_speech_prob"] = r.no_speech_prob;
            d["temperature"] = r.temperature;
            return d;
          },
          py::arg("input_features"), py::kw_only(), py::arg("language") = py::none(),
          py::arg("task") = "transcribe", py::arg("timestamps") = false, py::arg("beam_size") = 0,
          py::arg("patience") = 1.0, py::arg("length_penalty") = py::none(),
          py::arg("temperature") = 0.0, py::arg("best_of") = 5, py::arg("seed") = 0,
          py::arg("max_new_tokens") = 0, py::arg("prompt") = std::vector<int64_t>{},
          py::arg("suppress_blank") = true, py::arg("suppress_tokens") = true,
          R"doc(Decodes one 30-second window as openai-whisper's DecodingTask.

input_features: [1, num_mel_bins, 3000]. language: a code ("en", ...) or None to detect it;
task: "transcribe" | "translate"; beam_size >= 1 for beam search (0: greedy or, with
temperature > 0, best-of-N sampling); max_new_tokens 0 = 224; prompt: previous text tokens.
Returns {"tokens": [int] (sampled, <|endoftext|> excluded), "language", "sum_logprob",
"avg_logprob", "no_speech_prob", "temperature"}.)doc")
      .def(
          "transcribe",
          [](PyWhisper& w, const TensorArg& wave, const std::string& tokenizer,
             std::optional<std::string> language, const std::string& task, bool timestamps,
             int beam_size, const std::vector<double>& temperatures,
             std::optional<double> compression_ratio_threshold,
             std::optional<double> logprob_threshold, std::optional<double> no_speech_threshold,
             bool condition_on_previous_text, const std::string& initial_prompt,
             bool clamp_segments) {
            const torch::Tensor x = mono_wave(wave.tensor, "Whisper.transcribe");
            models::WhisperTranscribeOptions o;
            o.decoding = decoding_options(language, task, timestamps, beam_size, 1.0, std::nullopt,
                                          0.0, 5, 0, 0, {}, true, true);
            o.temperatures = temperatures;
            o.compression_ratio_threshold = compression_ratio_threshold;
            o.logprob_threshold = logprob_threshold;
            o.no_speech_threshold = no_speech_threshold;
            o.condition_on_previous_text = condition_on_previous_text;
            o.initial_prompt = initial_prompt;
            o.clamp_segments = clamp_segments;
            o.validate();
            models::WhisperTranscript t;
            {
              py::gil_scoped_release release;
              t = w.transcriber(tokenizer).transcribe(x, o);
            }
            py::dict d;
            d["text"] = t.text;
            d["language"] = t.language;
            py::list segments;
            for (const auto& s : t.segments) segments.append(segment_dict(s));
            d["segments"] = segments;
            return d;
          },
          py::arg("wave"), py::kw_only(), py::arg("tokenizer") = "",
          py::arg("language") = py::none(), py::arg("task") = "transcribe",
          py::arg("timestamps") = false, py::arg("beam_size") = 0,
          py::arg("temperatures") = std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0},
          py::arg("compression_ratio_threshold") = 2.4, py::arg("logprob_threshold") = -1.0,
          py::arg("no_speech_threshold") = 0.6, py::arg("condition_on_previous_text") = true,
          py::arg("initial_prompt") = "", py::arg("clamp_segments") = true,
          R"doc(Audio of any length -> text and timed segments, as openai-whisper's transcribe().

wave: mono [samples] at 16 kHz (alto.load_audio(path, sample_rate=16000, mono=True)[0][0]).
tokenizer: a folder or .tiktoken file; "" reads the model folder's. Returns {"text",
"language", "segments": [{"start", "end", "text", "tokens", "temperature", "avg_logprob",
"compression_ratio", "no_speech_prob"}]}; clamp_segments=False keeps openai-whisper's segment
times past the end of the audio. language: a code or an English name ("de", "German").)doc")
      .def("__repr__", [](const PyWhisper& w) {
        return "Whisper(" + w.model().config().to_string() + ", " +
               w.model().load_options().to_string() + ")";
      });

  using models::AudioEncoder;
  py::class_<AudioEncoder, std::shared_ptr<AudioEncoder>>(
      m, "AudioEncoder",
      R"doc(Any registered audio encoder (Whisper's today), loaded by config.json's model_type:
audio -> its features -> the encoder's last hidden state, what ``alto embed`` writes::

    enc = alto.models.AudioEncoder.from_pretrained("whisper-tiny")
    wave, rate = alto.load_audio("speech.wav", sample_rate=enc.sampling_rate, mono=True)
    out = enc.embed(wave[0])   # {"input_features", "last_hidden_state" [1, frames, hidden]})doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::const_pointer_cast<AudioEncoder>(AudioEncoder::from_pretrained(dir, options));
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads the encoder config.json's model_type names. Raises alto.Unsupported for an "
          "unknown model_type and alto.Error naming what is missing or inconsistent.")
      .def_static(
          "model_types", [] { return registry_descriptions(models::audio_encoders()); },
          "The registered encoders: {model_type: description}.")
      .def_property_readonly(
          "sampling_rate",
          [](const AudioEncoder& e) { return e.feature_extractor().sampling_rate(); },
          "The rate embed() takes.")
      .def_property_readonly("max_seconds", &AudioEncoder::max_seconds,
                             "Seconds one call encodes at most; longer audio is cut there.")
      .def(
          "embed",
          [](const AudioEncoder& e, const TensorArg& wave) {
            const torch::Tensor x = mono_wave(wave.tensor, "AudioEncoder.embed");
            models::AudioEmbedding out;
            {
              py::gil_scoped_release release;
              out = e.embed(x);
            }
            py::dict d;
            d["input_features"] = out.input_features;
            d["last_hidden_state"] = out.last_hidden_state;
            return d;
          },
          py::arg("wave"),
          "wave: mono [samples] (or [1, samples]) at sampling_rate -> {\"input_features\", "
          "\"last_hidden_state\" float32 [1, frames, hidden]}, equal to ``alto embed``.");
}

}  // namespace alto::python
