// audio/: load_audio, save_audio, resample, AudioStreamReader.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/resample.h"
#include "alto/audio/save.h"
#include "alto/audio/stream_reader.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

/// The decoded samples as a [channels, frames] float32 tensor that owns them: no copy.
torch::Tensor to_owned_tensor(audio::Audio&& audio) {
  if (audio.samples.empty()) return torch::zeros({audio.channels, audio.frames});
  auto* owned = new audio::Audio(std::move(audio));
  return torch::from_blob(
      owned->samples.data(), {owned->channels, owned->frames}, [owned](void*) { delete owned; },
      torch::kFloat32);
}

audio::ResamplerEngine parse_engine(const std::string& name) {
  if (name == "soxr") return audio::ResamplerEngine::kSoxr;
  if (name == "swr") return audio::ResamplerEngine::kSwr;
  throw InvalidArgument("resampler must be \"soxr\" or \"swr\", got \"" + name + "\"");
}

audio::DecodeOptions load_options(std::optional<int> sample_rate, bool mono, double offset,
                                  std::optional<double> duration, std::optional<int> channel,
                                  const std::string& resampler) {
  audio::DecodeOptions o;
  o.sample_rate = sample_rate;
  o.mono = mono;
  o.offset = offset;
  o.duration = duration;
  o.channel = channel;
  o.resampler = parse_engine(resampler);
  o.validate();
  return o;
}

/// [frames] or [channels, frames] floating samples as alto's planar audio.
audio::Audio audio_argument(const torch::Tensor& wave, int sample_rate, const char* what) {
  floating(wave, std::string(what) + ": wave", 1, 2);
  check_finite(wave, std::string(what) + ": wave");
  return audio::audio_from_tensor(wave, sample_rate);
}

py::dict info_dict(const audio::AudioInfo& info) {
  py::dict d;
  d["path"] = info.path;
  d["container"] = info.container;
  d["codec"] = info.codec;
  d["sample_rate"] = info.sample_rate;
  d["channels"] = info.channels;
  d["frames"] = info.frames;
  d["duration"] = info.duration_seconds();
  return d;
}

/// AudioStreamReader is stateful: one lock per reader makes concurrent next() calls from
/// several Python threads take turns instead of racing.
class StreamReader {
 public:
  StreamReader(const std::string& path, const audio::DecodeOptions& options, int64_t chunk_frames)
      : reader_(path, options, chunk_frames) {}

  torch::Tensor next() {
    audio::Audio chunk;
    bool more;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      more = reader_.read(chunk);
    }
    if (!more) throw py::stop_iteration();
    return to_owned_tensor(std::move(chunk));
  }

  const audio::AudioStreamReader& reader() const { return reader_; }

 private:
  std::mutex mutex_;
  audio::AudioStreamReader reader_;
};

}  // namespace

void bind_audio(py::module_& m) {
  m.def(
      "load_audio",
      [](const std::string& path, std::optional<int> sample_rate, bool mono, double offset,
         std::optional<double> duration, std::optional<int> channel, const std::string& resampler) {
        const audio::DecodeOptions options =
            load_options(sample_rate, mono, offset, duration, channel, resampler);
        audio::Audio audio;
        {
          py::gil_scoped_release release;
          audio = audio::load_audio(path, options);
        }
        const int rate = audio.sample_rate;
        return py::make_tuple(to_owned_tensor(std::move(audio)), rate);
      },
      py::arg("path"), py::arg("sample_rate") = py::none(), py::arg("mono") = false,
      py::arg("offset") = 0.0, py::arg("duration") = py::none(), py::arg("channel") = py::none(),
      py::arg("resampler") = "soxr",
      R"doc(Decodes an audio file (WAV, FLAC, Ogg, AIFF, MP3, AAC/M4A, Opus, the audio of a video).

Args:
    path: the file ("-" reads standard input).
    sample_rate: audio::resample to this rate; None keeps the file's.
    mono: downmix to one channel (the mean of all channels).
    offset: seconds to skip (seeks; the skipped part is not decoded).
    duration: seconds to read from the offset; None reads to the end.
    channel: keep only this channel (0-based).
    resampler: "soxr" (default, ~134 dB SNR) or "swr".

Returns:
    (wave, sample_rate): wave is torch.float32 [channels, frames] owning the decoded samples
    (no copy is made); ``wave.numpy()`` views it as numpy.

Raises:
    alto.IoError for a missing, unreadable or corrupt file; alto.InvalidArgument for bad options.)doc");

  m.def(
      "probe_audio",
      [](const std::string& path) {
        audio::AudioInfo info;
        {
          py::gil_scoped_release release;
          info = audio::probe_audio(path);
        }
        return info_dict(info);
      },
      py::arg("path"),
      "Container, codec, sample_rate, channels, frames (exact, by decoding) and duration of "
      "``path`` as a dict.");

  m.def(
      "save_audio",
      [](const std::string& path, const TensorArg& wave, int sample_rate,
         std::optional<std::string> format, const std::string& encoding) {
        audio::Audio audio = audio_argument(wave, sample_rate, "save_audio");
        audio::SaveFormat f = audio::SaveFormat::for_path(path);
        if (format) f.file = audio::parse_file_format(*format);
        f.encoding = audio::parse_sample_encoding(encoding);
        py::gil_scoped_release release;
        audio::save_audio(path, audio, f);
      },
      py::arg("path"), py::arg("wave"), py::arg("sample_rate"), py::arg("format") = py::none(),
      py::arg("encoding") = "16",
      R"doc(Writes ``wave`` ([frames] or [channels, frames], floating point, nominally in [-1, 1])
to ``path``.

Args:
    format: "wav" or "flac"; None picks it from the extension (else WAV).
    encoding: "16", "24" (PCM, rounded and clipped) or "32f" (float, WAV only, bit-exact).

Raises alto.Error for NaN/Inf samples, an impossible encoding or an unwritable path.)doc");

  m.def(
      "resample",
      [](const TensorArg& wave, int orig_sample_rate, int new_sample_rate,
         const std::string& resampler) {
        audio::Audio audio = audio_argument(wave, orig_sample_rate, "resample");
        const audio::ResamplerEngine engine = parse_engine(resampler);
        const bool mono = wave.tensor.dim() == 1;
        audio::Audio out;
        {
          py::gil_scoped_release release;
          out = audio::resample(audio, new_sample_rate, engine);
        }
        torch::Tensor result = to_owned_tensor(std::move(out));
        return mono ? result[0] : result;
      },
      py::arg("wave"), py::arg("orig_sample_rate"), py::arg("new_sample_rate"),
      py::arg("resampler") = "soxr",
      R"doc(Resamples ``wave`` ([frames] or [channels, frames]) from ``orig_sample_rate`` to
``new_sample_rate`` with zero delay; the output length depends only on the input length
(44100 frames at 44.1 kHz give exactly 16000 at 16 kHz). Returns float32 of the input's rank.)doc");

  py::class_<StreamReader>(m, "AudioStreamReader", R"doc(Reads an audio file in fixed-size chunks.

Decoding, channel selection and resampling all happen chunk by chunk; the concatenated chunks
equal audio::load_audio() with the same options sample for sample. Iterate over it::

    for chunk in alto.AudioStreamReader("speech.flac", chunk_frames=16000, sample_rate=16000):
        ...  # chunk: torch.float32 [channels, <= chunk_frames]

A reader may be shared between threads; their next() calls take turns.)doc")
      .def(
          py::init([](const std::string& path, int64_t chunk_frames, std::optional<int> sample_rate,
                      bool mono, double offset, std::optional<double> duration,
                      std::optional<int> channel, const std::string& resampler) {
            const audio::DecodeOptions options =
                load_options(sample_rate, mono, offset, duration, channel, resampler);
            py::gil_scoped_release release;
            return std::make_unique<StreamReader>(path, options, chunk_frames);
          }),
          py::arg("path"), py::arg("chunk_frames"), py::arg("sample_rate") = py::none(),
          py::arg("mono") = false, py::arg("offset") = 0.0, py::arg("duration") = py::none(),
          py::arg("channel") = py::none(), py::arg("resampler") = "soxr",
          "Opens ``path``; the options are load_audio's. chunk_frames: frames per chunk (the "
          "last one may be shorter).")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &StreamReader::next,
           "The next chunk, torch.float32 [channels, frames]; StopIteration at the end.")
      .def_property_readonly(
          "sample_rate", [](const StreamReader& r) { return r.reader().sample_rate(); },
          "Sample rate of the chunks.")
      .def_property_readonly(
          "channels", [](const StreamReader& r) { return r.reader().channels(); },
          "Channels of the chunks.")
      .def_property_readonly(
          "source_info", [](const StreamReader& r) { return info_dict(r.reader().source_info()); },
          "The source as its decoder reports it (before the options), as probe_audio's dict.");
}

}  // namespace alto::python
