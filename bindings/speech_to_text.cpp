// models/kyutai_speech_to_text: the model with its parts (processor, codec, embeddings, decoder
// steps, head) for layer-by-layer parity, a live stream and the batched runner.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "alto/models/kyutai_speech_to_text/speech_to_text_stream.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using models::KyutaiSpeechToText;
using models::SpeechToTextBatch;
using models::SpeechToTextStream;
using models::SpeechToTextStreamOptions;
using models::SpeechToTextTranscript;
using models::TimedWord;
using Model = std::shared_ptr<KyutaiSpeechToText>;

/// Decoder state is mutated by forward(): one lock per state.
struct State {
  std::mutex mutex;
  models::KyutaiSpeechToTextState state;
};

/// A stream or batch is one sequence of calls: one lock each.
template <typename T>
struct Locked {
  template <typename... Args>
  explicit Locked(Args&&... args) : value(std::forward<Args>(args)...) {}
  std::mutex mutex;
  T value;
};

py::list words_list(const std::vector<TimedWord>& words) {
  py::list out;
  for (const auto& w : words) {
    py::dict d;
    d["word"] = w.text;
    d["start"] = w.start;
    d["end"] = w.end;
    d["decided_at"] = w.decided_at;
    out.append(d);
  }
  return out;
}

py::dict transcript_dict(const SpeechToTextTranscript& t) {
  py::dict d;
  d["text"] = t.text;
  d["token_ids"] = t.token_ids;
  d["words"] = words_list(t.words);
  return d;
}

SpeechToTextStreamOptions stream_options(bool resample) {
  SpeechToTextStreamOptions o;
  o.resample = resample;
  return o;
}

torch::Tensor mono(const TensorArg& samples, const std::string& what) {
  return floating(samples.tensor, what, 1, 2);
}

}  // namespace

void bind_speech_to_text(py::module_& m) {
  py::class_<State, std::shared_ptr<State>>(
      m, "KyutaiSpeechToTextState",
      "Decoder state of a batch of rows: each row's sliding-window KV ring and position.")
      .def_property_readonly(
          "positions", [](State& s) { return s.state.positions.next(); },
          "int64 [batch]: tokens each row has fed.");

  py::class_<KyutaiSpeechToText, Model>(m, "KyutaiSpeechToText", R"doc(Kyutai streaming speech-to-text.

transformers' KyutaiSpeechToTextForConditionalGeneration (kyutai/stt-1b-en_fr, stt-2.6b-en)
from its transformers-format folder. Offline::

    stt = alto.models.KyutaiSpeechToText.from_pretrained("stt-1b-en_fr-trfs")
    out = stt.transcribe(wave)          # float [samples] at 24 kHz
    out["text"], out["words"]           # [{"word", "start", "end", "decided_at"}]

Parts for parity checks: process, encode (Mimi), embed, start/forward (decoder steps), logits.
Live: alto.models.SpeechToTextStream; many streams: alto.models.SpeechToTextBatch.)doc")
      .def_static(
          "from_pretrained",
          [](const std::string& dir, const std::string& device, const std::string& dtype) {
            const auto options = LoadOptions::parse(device, dtype);
            py::gil_scoped_release release;
            return std::const_pointer_cast<KyutaiSpeechToText>(
                KyutaiSpeechToText::from_pretrained(dir, options));
          },
          py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
          "Loads config.json, model.safetensors (the decoder in `dtype` — \"int8\": int8 linear "
          "weights, float32 activations — the codec in float32), "
          "processor_config.json and tokenizer.json / tokenizer*.model.")
      .def_property_readonly("sampling_rate", &KyutaiSpeechToText::sample_rate,
                             "The rate audio must have (24000).")
      .def_property_readonly("frame_rate", &KyutaiSpeechToText::frame_rate,
                             "Decoder steps per second of audio (12.5).")
      .def_property_readonly(
          "num_codebooks", [](const KyutaiSpeechToText& s) { return s.config().num_codebooks; },
          "Mimi codebooks per frame the decoder reads.")
      .def_property_readonly(
          "vocab_size", [](const KyutaiSpeechToText& s) { return s.config().vocab_size; },
          "Text vocabulary of the head (the initial token included).")
      .def_property_readonly(
          "tokenizer",
          [](const Model& s) { return std::const_pointer_cast<tokenizers::TextTokenizer>(s->tokenizer()); },
          "The text tokenizer (SentencePiece).")
      .def(
          "process",
          [](const KyutaiSpeechToText& s, const TensorArg& wave) {
            const torch::Tensor x = mono(wave, "KyutaiSpeechToText.process: wave");
            models::KyutaiSpeechToTextInputs in;
            {
              py::gil_scoped_release release;
              in = s.process(x);
            }
            py::dict d;
            d["input_values"] = in.input_values;
            d["padding_mask"] = in.padding_mask;
            return d;
          },
          py::arg("wave"),
          "The processor: {'input_values' [1, 1, n], 'padding_mask' [1, n]} with the silence "
          "prefix and the delay's suffix added.")
      .def(
          "encode",
          [](const KyutaiSpeechToText& s, const TensorArg& input_values) {
            const torch::Tensor x =
                floating(input_values.tensor, "KyutaiSpeechToText.encode: input_values", 3, 3);
            py::gil_scoped_release release;
            return s.encode(x);
          },
          py::arg("input_values"), "Mimi codes int64 [batch, K, frames] of input_values.")
      .def(
          "embed",
          [](const KyutaiSpeechToText& s, const TensorArg& ids) {
            const torch::Tensor x = integral(ids.tensor, "KyutaiSpeechToText.embed: input_ids", 3);
            py::gil_scoped_release release;
            return s.embed(x);
          },
          py::arg("input_ids"),
          "input_ids [B, T, 1 + K] (text token, then the frame's codes) -> summed embeddings.")
      .def(
          "start",
          [](const KyutaiSpeechToText& s, int64_t batch) {
            auto state = std::make_shared<State>();
            state->state = s.start(batch);
            return state;
          },
          py::arg("batch") = 1, "Empty decoder state for `batch` rows.")
      .def(
          "forward",
          [](const KyutaiSpeechToText& s, const TensorArg& embeds, State& state,
             std::optional<TensorArg> advancing, bool intermediates) -> py::object {
            const torch::Tensor x =
                floating(embeds.tensor, "KyutaiSpeechToText.forward: inputs_embeds", 3, 3);
            const torch::Tensor adv = advancing ? advancing->tensor.to(torch::kBool) : torch::Tensor();
            models::Intermediates inter;
            torch::Tensor hidden;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(state.mutex);
              hidden = s.forward(x, state.state, adv, intermediates ? &inter : nullptr);
            }
            if (!intermediates) return py::cast(hidden);
            return py::make_tuple(hidden, intermediates_dict(inter));
          },
          py::arg("inputs_embeds"), py::arg("state"), py::arg("advancing") = py::none(),
          py::arg("intermediates") = false,
          "Decoder over inputs_embeds [B, T, hidden] after the state's positions -> final-norm "
          "hidden [B, T, hidden] (and {layer name: output} with intermediates=True). "
          "advancing: bool [B] with T = 1 steps only those rows.")
      .def(
          "logits",
          [](const KyutaiSpeechToText& s, const TensorArg& hidden) {
            const torch::Tensor x = floating(hidden.tensor, "KyutaiSpeechToText.logits: hidden");
            py::gil_scoped_release release;
            return s.logits(x);
          },
          py::arg("hidden"), "Text logits float32 [..., vocab_size].")
      .def(
          "transcribe",
          [](const KyutaiSpeechToText& s, const TensorArg& wave) {
            const torch::Tensor x = mono(wave, "KyutaiSpeechToText.transcribe: wave");
            SpeechToTextTranscript t;
            {
              py::gil_scoped_release release;
              t = s.transcribe(x);
            }
            return transcript_dict(t);
          },
          py::arg("wave"),
          "Greedy transcription of mono samples at sampling_rate: {'text', 'token_ids' (one per "
          "step, the audio-BOS step first), 'words'}.")
      .def(
          "transcribe_codes",
          [](const KyutaiSpeechToText& s, const TensorArg& codes, bool return_logits) {
            const torch::Tensor c =
                integral(codes.tensor, "KyutaiSpeechToText.transcribe_codes: codes", 3);
            SpeechToTextTranscript t;
            torch::Tensor logits;
            {
              py::gil_scoped_release release;
              t = s.transcribe_codes(c, return_logits ? &logits : nullptr);
            }
            py::dict d = transcript_dict(t);
            if (return_logits) d["logits"] = logits;
            return d;
          },
          py::arg("codes"), py::arg("return_logits") = false,
          "Greedy decoding of codes int64 [1, K, T]: T + 1 steps (with 'logits' [T + 1, vocab] "
          "when asked).");

  py::class_<Locked<SpeechToTextStream>, std::shared_ptr<Locked<SpeechToTextStream>>>(
      m, "SpeechToTextStream",
      R"doc(One live Kyutai STT stream: audio in any chunking, words as they are decided.

    stream = alto.models.SpeechToTextStream(stt)
    for chunk in chunks:
        for w in stream.accept_waveform(24000, chunk): print(w["word"])
    stream.input_finished()
    stream.transcript()["text"]

Equal to stt.transcribe(whole recording) for every chunking; bounded memory.)doc")
      .def(py::init([](const Model& model, bool resample) {
             return std::make_shared<Locked<SpeechToTextStream>>(model, stream_options(resample));
           }),
           py::arg("model"), py::arg("resample") = false)
      .def(
          "accept_waveform",
          [](Locked<SpeechToTextStream>& s, int64_t rate, const TensorArg& samples) {
            const torch::Tensor x = mono(samples, "SpeechToTextStream.accept_waveform: samples");
            std::vector<TimedWord> words;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(s.mutex);
              words = s.value.accept_waveform(rate, x);
            }
            return words_list(words);
          },
          py::arg("sample_rate"), py::arg("samples"), "Returns the words these samples decide.")
      .def(
          "input_finished",
          [](Locked<SpeechToTextStream>& s) {
            std::vector<TimedWord> words;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(s.mutex);
              words = s.value.input_finished();
            }
            return words_list(words);
          },
          "Ends the audio; returns the remaining words.")
      .def(
          "reset",
          [](Locked<SpeechToTextStream>& s) {
            std::lock_guard<std::mutex> lock(s.mutex);
            s.value.reset();
          },
          "Starts a new stream.")
      .def(
          "transcript",
          [](Locked<SpeechToTextStream>& s) {
            std::lock_guard<std::mutex> lock(s.mutex);
            return transcript_dict(s.value.transcript());
          },
          "Everything so far: {'text', 'token_ids', 'words'}.");

  using Batch = Locked<SpeechToTextBatch>;
  py::class_<Batch, std::shared_ptr<Batch>>(
      m, "SpeechToTextBatch",
      "Many Kyutai STT streams in fixed slots, stepped together in one batch per frame; each "
      "stream's output equals running it alone.")
      .def(py::init([](const Model& model, int64_t slots, bool resample) {
             return std::make_shared<Batch>(model, slots, stream_options(resample));
           }),
           py::arg("model"), py::arg("slots"), py::arg("resample") = false)
      .def("open", [](Batch& b) { std::lock_guard<std::mutex> l(b.mutex); return b.value.open(); },
           "A free slot for a new stream, or -1.")
      .def("close", [](Batch& b, int64_t slot) { std::lock_guard<std::mutex> l(b.mutex); b.value.close(slot); },
           py::arg("slot"), "The stream leaves; its slot is free again.")
      .def(
          "accept_waveform",
          [](Batch& b, int64_t slot, int64_t rate, const TensorArg& samples) {
            const torch::Tensor x = mono(samples, "SpeechToTextBatch.accept_waveform: samples");
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> l(b.mutex);
            b.value.accept_waveform(slot, rate, x);
          },
          py::arg("slot"), py::arg("sample_rate"), py::arg("samples"),
          "Runs the slot's Mimi encoder over mono samples and queues the frames they complete.")
      .def("input_finished", [](Batch& b, int64_t slot) { std::lock_guard<std::mutex> l(b.mutex); b.value.input_finished(slot); },
           py::arg("slot"), "Ends the slot's audio (the delay's silence and the last frame queued).")
      .def(
          "step",
          [](Batch& b) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> l(b.mutex);
            return b.value.step();
          },
          "One decoder step for every stream with a frame; returns how many advanced.")
      .def(
          "run",
          [](Batch& b) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> l(b.mutex);
            b.value.run();
          },
          "step() until no stream has a frame.")
      .def("take_words", [](Batch& b, int64_t slot) { std::lock_guard<std::mutex> l(b.mutex); return words_list(b.value.take_words(slot)); },
           py::arg("slot"), "Words decided since the last call.")
      .def("transcript", [](Batch& b, int64_t slot) { std::lock_guard<std::mutex> l(b.mutex); return transcript_dict(b.value.transcript(slot)); },
           py::arg("slot"), "Everything so far: {'text', 'token_ids', 'words'}.")
      .def("done", [](Batch& b, int64_t slot) { std::lock_guard<std::mutex> l(b.mutex); return b.value.done(slot); },
           py::arg("slot"), "Whether the slot's input is finished and its last word decided.");
}

}  // namespace alto::python
