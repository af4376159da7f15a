// tokenizers/audio_tokenizer.h: the neural audio codecs (EnCodec, Mimi, DAC) behind one
// interface, and their frame-by-frame streams.

#include "alto/tokenizers/audio_tokenizer.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/resample.h"
#include "alto/core/checkpoint.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

// Each [channels, samples] row of `x` [batch, channels, samples] from `from` Hz to `to` Hz.
torch::Tensor resample_rows(const torch::Tensor& x, int from, int to) {
  ALTO_CHECK(from > 0, "AudioTokenizer.encode: sampling_rate must be > 0, got ", from);
  std::vector<torch::Tensor> rows;
  const torch::Tensor cpu = x.to(torch::kCPU, torch::kFloat32);
  for (int64_t b = 0; b < cpu.size(0); ++b)
    rows.push_back(audio::to_tensor(audio::resample(audio::audio_from_tensor(cpu[b], from), to)));
  return torch::stack(rows).to(x.device());
}

using tokenizers::AudioCodes;
using tokenizers::AudioEncodeOptions;
using tokenizers::AudioTokenizer;
using tokenizers::AudioTokenizerStream;

AudioEncodeOptions encode_options(double bandwidth, int64_t num_quantizers) {
  AudioEncodeOptions o;
  o.bandwidth = bandwidth;
  o.num_quantizers = num_quantizers;
  return o;
}

/// A stream holds encoder and decoder state: one lock per stream makes calls from several
/// threads take turns.
class Stream {
 public:
  explicit Stream(std::unique_ptr<AudioTokenizerStream> stream) : stream_(std::move(stream)) {}

  torch::Tensor encode_step(const torch::Tensor& samples) {
    std::lock_guard<std::mutex> lock(mutex_);
    return stream_->encode_step(samples);
  }
  torch::Tensor decode_step(const torch::Tensor& codes) {
    std::lock_guard<std::mutex> lock(mutex_);
    return stream_->decode_step(codes);
  }
  /// None when the stream held nothing back (an undefined tensor in C++).
  std::optional<torch::Tensor> encode_flush() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held(stream_->encode_flush());
  }
  std::optional<torch::Tensor> decode_flush() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held(stream_->decode_flush());
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    stream_->reset();
  }

 private:
  static std::optional<torch::Tensor> held(torch::Tensor t) {
    if (!t.defined()) return std::nullopt;
    return t;
  }

  std::mutex mutex_;
  std::unique_ptr<AudioTokenizerStream> stream_;
};

}  // namespace

void bind_audio_tokenizer(py::module_& top) {
  py::module_ m = top.attr("tokenizers").cast<py::module_>();
  // pybind11 holders cannot hold const objects; only const methods are bound, so the model
  // stays immutable.
  using Holder = std::shared_ptr<AudioTokenizer>;

  py::class_<Stream, std::shared_ptr<Stream>>(
      m, "AudioTokenizerStream",
      R"doc(Frame-by-frame encoding and decoding with explicit state (AudioTokenizer.stream() makes one).

Feeding any chunking of a signal gives the codes (and audio) of one offline call over the whole
signal::

    s = tok.stream()
    codes = torch.cat([s.encode_step(chunk) for chunk in chunks] + [s.encode_flush()], -1)
    audio = torch.cat([s.decode_step(codes[..., t:t + 1]) for t in range(codes.shape[-1])], -1))doc")
      .def(
          "encode_step",
          [](Stream& s, const TensorArg& samples) {
            return s.encode_step(
                floating(samples.tensor, "AudioTokenizerStream.encode_step: samples", 3, 3));
          },
          py::arg("samples"), py::call_guard<py::gil_scoped_release>(),
          "samples: float [batch, channels, n], any n >= 0 -> the codes int64 [batch, K, t] of "
          "every frame these samples complete (t may be 0).")
      .def(
          "decode_step",
          [](Stream& s, const TensorArg& codes) {
            return s.decode_step(
                integral(codes.tensor, "AudioTokenizerStream.decode_step: codes", 3));
          },
          py::arg("codes"), py::call_guard<py::gil_scoped_release>(),
          "codes: int [batch, K, t], any t >= 0 -> the float32 samples [batch, channels, n] those "
          "frames complete.")
      .def("encode_flush", &Stream::encode_flush, py::call_guard<py::gil_scoped_release>(),
           "Ends the input: the codes int64 [batch, K, t] of the last partial frame (which the "
           "offline encode pads to a whole frame) and of frames still held back, or None; "
           "reset() before reusing the encoder side.")
      .def("decode_flush", &Stream::decode_flush, py::call_guard<py::gil_scoped_release>(),
           "Ends the codes: audio float32 [batch, channels, n] still held back, or None.")
      .def("reset", &Stream::reset, py::call_guard<py::gil_scoped_release>(),
           "Forgets all encoder and decoder state.");

  py::class_<AudioTokenizer, Holder> cls(
      m, "AudioTokenizer",
      R"doc(A neural audio codec (EnCodec, Mimi, DAC): audio -> discrete codes -> audio.

Loaded from a Hugging Face checkpoint folder unchanged; the architecture comes from config.json's
model_type. Codes use the layout transformers' ``encode`` returns as ``audio_codes``::

    tok = alto.AudioTokenizer.from_pretrained("encodec_24khz")
    wave, sr = alto.load_audio("speech.wav", sample_rate=tok.sample_rate, mono=True)
    codes = tok.encode(wave[None])           # EnCodec [chunks, 1, K, T]; Mimi/DAC [1, K, T]
    audio = tok.decode(codes)                # float32 [1, channels, whole frames of samples]
    audio = tok.decode(codes, num_samples=wave.shape[-1])   # the input's length

The model is immutable and may be used from several threads at once (the GIL is released while
it computes); streaming state lives in the AudioTokenizerStream objects stream() returns.)doc");
  cls.def_static(
         "from_pretrained",
         [](const std::string& dir, const std::string& device, const std::string& dtype) {
           const auto options = alto::LoadOptions::parse(device, dtype);
           py::gil_scoped_release release;
           return std::const_pointer_cast<AudioTokenizer>(
               AudioTokenizer::from_pretrained(dir, options));
         },
         py::arg("dir"), py::arg("device") = "cpu", py::arg("dtype") = "float32",
         "Loads a codec folder (config.json, model.safetensors). Raises alto.Unsupported naming "
         "the model_type for an architecture alto lacks.")
      .def_static(
          "model_types", [] { return registry_descriptions(tokenizers::audio_tokenizers()); },
          "The registered codecs: {model_type: description}.")
      .def_property_readonly("model_type", &AudioTokenizer::model_type,
                             "config.json's model_type: \"encodec\", \"mimi\" or \"dac\".")
      .def_property_readonly("sample_rate", &AudioTokenizer::sample_rate,
                             "Input/output sample rate.")
      .def_property_readonly("channels", &AudioTokenizer::channels, "Audio channels.")
      .def_property_readonly("frame_rate", &AudioTokenizer::frame_rate, "Code frames per second.")
      .def_property_readonly("hop_length", &AudioTokenizer::hop_length, "Samples per code frame.")
      .def_property_readonly("codebook_size", &AudioTokenizer::codebook_size,
                             "Entries per codebook.")
      .def_property_readonly(
          "num_codebooks", [](const AudioTokenizer& t) { return t.num_codebooks(); },
          "Codebooks of the full model (K at the highest bandwidth / all quantizers).")
      .def_property_readonly("supports_streaming", &AudioTokenizer::supports_streaming,
                             "Whether stream() is available (causal codecs).")
      .def(
          "encode",
          [](const AudioTokenizer& t, const TensorArg& audio, double bandwidth,
             int64_t num_quantizers, bool return_scales, std::optional<int> sampling_rate,
             bool resample) -> py::object {
            torch::Tensor x = floating(audio.tensor, "AudioTokenizer.encode: audio", 3, 3);
            check_finite(x, "AudioTokenizer.encode: audio");
            ALTO_CHECK(sampling_rate || !resample,
                       "AudioTokenizer.encode: resample=True needs the audio's sampling_rate");
            if (sampling_rate && *sampling_rate != t.sample_rate()) {
              ALTO_CHECK(resample, "AudioTokenizer.encode: the audio is at ", *sampling_rate,
                         " Hz; this ", t.model_type(), " model takes ", t.sample_rate(),
                         " Hz (pass resample=True, or load it at that rate)");
              x = resample_rows(x, *sampling_rate, static_cast<int>(t.sample_rate()));
            }
            const AudioEncodeOptions o = encode_options(bandwidth, num_quantizers);
            AudioCodes codes;
            {
              py::gil_scoped_release release;
              codes = t.encode(x, o);
            }
            if (!return_scales) return py::cast(codes.codes);
            return py::make_tuple(codes.codes,
                                  codes.scales.defined() ? py::cast(codes.scales) : py::none());
          },
          py::arg("audio"), py::kw_only(), py::arg("bandwidth") = 0.0,
          py::arg("num_quantizers") = 0, py::arg("return_scales") = false,
          py::arg("sampling_rate") = py::none(), py::arg("resample") = false,
          R"doc(audio: float [batch, channels, samples] at sample_rate -> int64 codes.

sampling_rate: the audio's rate; another than the model's is refused, or with resample=True
converted (soxr) first. None: the audio is taken to be at the model's rate.

EnCodec: [chunks, batch, K, T] (transformers' audio_codes); Mimi and DAC: [batch, K, T].
bandwidth (EnCodec, kbps, one of config.json's target_bandwidths; 0 = the smallest) and
num_quantizers (Mimi / DAC; 0 = all) choose K. With return_scales=True returns (codes, scales):
EnCodec's per-chunk audio_scales when the model normalises its input, else None.)doc")
      .def(
          "decode",
          [](const AudioTokenizer& t, const TensorArg& codes, std::optional<TensorArg> scales,
             std::optional<int64_t> num_samples, std::optional<TensorArg> padding_mask) {
            AudioCodes c;
            c.codes = integral(codes.tensor, "AudioTokenizer.decode: codes", -1);
            if (scales) c.scales = floating(scales->tensor, "AudioTokenizer.decode: scales");
            ALTO_CHECK(!(num_samples && padding_mask),
                       "AudioTokenizer.decode: pass num_samples or padding_mask, not both");
            ALTO_CHECK(!num_samples || *num_samples > 0,
                       "AudioTokenizer.decode: num_samples must be > 0, got ", *num_samples);
            if (num_samples) c.num_samples = *num_samples;
            if (padding_mask) c.num_samples = padding_mask->tensor.size(-1);
            py::gil_scoped_release release;
            return t.decode(c);
          },
          py::arg("codes"), py::arg("scales") = py::none(), py::kw_only(),
          py::arg("num_samples") = py::none(), py::arg("padding_mask") = py::none(),
          R"doc(codes in encode's layout (and EnCodec's scales when it returned some) -> float32
[batch, channels, samples].

Without num_samples the output covers whole code frames (hop_length samples each), as
transformers' decode without a padding_mask; num_samples (or a padding_mask [batch, n], as
transformers takes it) truncates it to the input's length. Raises alto.InvalidArgument for codes
that do not fit (shape, id range).)doc")
      .def(
          "stream",
          [](const AudioTokenizer& t, double bandwidth, int64_t num_quantizers, int64_t batch) {
            return std::make_shared<Stream>(
                t.stream(encode_options(bandwidth, num_quantizers), batch));
          },
          py::kw_only(), py::arg("bandwidth") = 0.0, py::arg("num_quantizers") = 0,
          py::arg("batch") = 1,
          "A fresh AudioTokenizerStream; alto.Unsupported when the codec cannot stream.")
      .def("__repr__", [](const AudioTokenizer& t) {
        return "AudioTokenizer(model_type=" + t.model_type() +
               ", sample_rate=" + std::to_string(t.sample_rate()) +
               ", channels=" + std::to_string(t.channels()) +
               ", num_codebooks=" + std::to_string(t.num_codebooks()) + ")";
      });
  top.attr("AudioTokenizer") = cls;
}

}  // namespace alto::python
