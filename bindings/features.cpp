// features/: every extractor with its options as keyword arguments, FeatureExtractor's
// transformers-shaped __call__ and from_pretrained, STFT / iSTFT, mel banks and windows.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alto/features/feature_extractor.h"
#include "alto/features/kaldi_fbank.h"
#include "alto/features/kaldi_mfcc.h"
#include "alto/features/mel.h"
#include "alto/features/mel_spectrogram.h"
#include "alto/features/seamless_m4t_feature_extractor.h"
#include "alto/features/stft.h"
#include "alto/features/wav2vec2_feature_extractor.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/features/window.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using namespace alto::features;  // NOLINT: this file binds that namespace

/// Options from keyword arguments through the struct's schema; an unknown keyword or a value of
/// the wrong type is an alto.InvalidArgument naming the field.
template <typename Options>
Options options_from(const py::kwargs& kwargs) {
  return Options::schema().make(option_values(kwargs, Options::schema().type()));
}

/// "Keyword options (with their defaults): a=1, b='x', ..." for a class docstring.
template <typename Options>
std::string options_doc() {
  const auto values = Options::schema().values(Options{});
  std::string doc = "\n\nKeyword options (with their defaults):\n    ";
  size_t column = 4;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string item =
        values[i].first + "=" + py::cast<std::string>(py::repr(py_value(values[i].second)));
    if (i + 1 < values.size()) item += ", ";
    if (column + item.size() > 96) {
      doc += "\n    ";
      column = 4;
    }
    doc += item;
    column += item.size();
  }
  return doc;
}

/// transformers' `padding` argument: None (the extractor's default), a bool or a strategy name.
PaddingOptions::Strategy padding_strategy(const py::object& padding) {
  if (padding.is_none()) return PaddingOptions::Strategy::kDefault;
  if (py::isinstance<py::bool_>(padding))
    return py::cast<bool>(padding) ? PaddingOptions::Strategy::kLongest
                                   : PaddingOptions::Strategy::kDoNotPad;
  if (py::isinstance<py::str>(padding))
    return PaddingOptions::parse_strategy(py::cast<std::string>(padding));
  throw InvalidArgument(
      "padding must be None, a bool or \"longest\" / \"max_length\" / "
      "\"do_not_pad\"");
}

/// raw_speech as transformers takes it: one clip [samples], a batch [batch, samples] or a list
/// of clips (torch.Tensor or numpy.ndarray each).
std::vector<torch::Tensor> clips_of(const py::object& raw_speech) {
  std::vector<torch::Tensor> clips;
  if (py::isinstance<py::list>(raw_speech) || py::isinstance<py::tuple>(raw_speech)) {
    for (py::handle item : raw_speech) {
      try {
        clips.push_back(py::cast<TensorArg>(item).tensor);
      } catch (const py::cast_error&) {
        throw InvalidArgument("raw_speech: every clip must be a torch.Tensor or numpy.ndarray");
      }
    }
    ALTO_CHECK(!clips.empty(), "raw_speech: the list of clips is empty");
  } else {
    torch::Tensor batch;
    try {
      batch = py::cast<TensorArg>(raw_speech).tensor;
    } catch (const py::cast_error&) {
      throw InvalidArgument("raw_speech must be a torch.Tensor, a numpy.ndarray or a list of them");
    }
    floating(batch, "raw_speech", 1, 2);
    if (batch.dim() == 1) {
      clips.push_back(batch);
    } else {
      for (int64_t i = 0; i < batch.size(0); ++i) clips.push_back(batch[i]);
    }
  }
  for (size_t i = 0; i < clips.size(); ++i)
    floating(clips[i], "raw_speech[" + std::to_string(i) + "]");
  return clips;
}

py::dict batch_dict(const BatchFeature& batch) {
  py::dict d;
  d[py::str(batch.name)] = batch.input_features;
  if (batch.attention_mask.defined()) d["attention_mask"] = batch.attention_mask;
  return d;
}

py::dict call_extractor(const FeatureExtractor& fe, const py::object& raw_speech,
                        std::optional<int> sampling_rate, const py::object& padding,
                        std::optional<int64_t> max_length, std::optional<bool> truncation,
                        std::optional<int64_t> pad_to_multiple_of,
                        std::optional<bool> return_attention_mask) {
  if (sampling_rate) fe.check_sampling_rate(*sampling_rate);
  const std::vector<torch::Tensor> clips = clips_of(raw_speech);
  PaddingOptions p;
  p.padding = padding_strategy(padding);
  p.max_length = max_length;
  p.truncation = truncation;
  p.pad_to_multiple_of = pad_to_multiple_of;
  p.return_attention_mask = return_attention_mask;
  BatchFeature batch;
  {
    py::gil_scoped_release release;
    batch = fe.compute_batch(clips, p);
  }
  return batch_dict(batch);
}

/// A mono waveform argument of compute(): floating point, [samples] or [1, samples].
torch::Tensor wave_of(const TensorArg& wave, const char* what) {
  return floating(wave.tensor, std::string(what) + ": wave", 1, 2);
}

template <typename Extractor, typename Holder>
void bind_options_api(py::class_<Extractor, FeatureExtractor, Holder>& cls) {
  using Options = typename Extractor::Options;
  cls.def(py::init([](const py::kwargs& kwargs) {
            return std::make_shared<Extractor>(options_from<Options>(kwargs));
          }),
          "Builds the extractor from keyword options (see the class docstring); the options "
          "are validated here and errors name the field.")
      .def_property_readonly(
          "options",
          [](const Extractor& e) { return options_dict(Options::schema().values(e.options())); },
          "The options as a dict of keyword arguments (pass it back with **).");
}

}  // namespace

void bind_features(py::module_& top) {
  py::module_ m = submodule(top, "features",
                            "Audio features equal to transformers' and torchaudio's: STFT, mel "
                            "spectrograms, Kaldi fbank/MFCC, Whisper / SeamlessM4T / Wav2Vec2 "
                            "extractors.");

  using Holder = std::shared_ptr<FeatureExtractor>;
  py::class_<FeatureExtractor, Holder> base(m, "FeatureExtractor",
                                            R"doc(The common face of alto's feature extractors.

``FeatureExtractor.from_pretrained(dir)`` reads a Hugging Face preprocessor_config.json and builds
the extractor its ``feature_extractor_type`` names (WhisperFeatureExtractor,
SeamlessM4TFeatureExtractor, Wav2Vec2FeatureExtractor). Calling an extractor behaves like
transformers' ``__call__(raw_speech, sampling_rate=..., return_tensors="pt")``::

    fe = alto.FeatureExtractor.from_pretrained("whisper-tiny")
    feats = fe(wave[0], sampling_rate=16000)      # {"input_features": [1, 80, 3000]}

Extractors are immutable and may be called from several threads at once.)doc");
  base.def_static(
          "from_pretrained",
          [](const std::string& dir) {
            py::gil_scoped_release release;
            return std::const_pointer_cast<FeatureExtractor>(
                FeatureExtractor::from_pretrained(dir));
          },
          py::arg("dir"),
          "Builds the extractor a preprocessor_config.json (or the model folder holding it) "
          "describes. Raises alto.Error naming the file and field for a bad config.")
      .def("__call__", &call_extractor, py::arg("raw_speech"), py::kw_only(),
           py::arg("sampling_rate") = py::none(), py::arg("padding") = py::none(),
           py::arg("max_length") = py::none(), py::arg("truncation") = py::none(),
           py::arg("pad_to_multiple_of") = py::none(),
           py::arg("return_attention_mask") = py::none(),
           R"doc(Features of one clip ([samples]), a batch ([batch, samples]) or a list of clips.

Returns a dict like transformers' BatchFeature with return_tensors="pt": "input_features"
("input_values" for Wav2Vec2) with a leading batch dimension, and "attention_mask" (int32) when
requested or when the extractor returns one by default. ``sampling_rate``, when given, must be
the extractor's (resample first otherwise). ``padding``: None (the extractor's default), True /
"longest", "max_length", False / "do_not_pad"; ``max_length``, ``truncation`` and
``pad_to_multiple_of`` as in transformers.)doc")
      .def_property_readonly("name", &FeatureExtractor::name,
                             "\"whisper\", \"kaldi-fbank\", \"kaldi-mfcc\", \"seamless-m4t\", "
                             "\"wav2vec2\" or \"mel\".")
      .def_property_readonly("sampling_rate", &FeatureExtractor::sampling_rate,
                             "The sample rate the extractor expects.")
      .def("__repr__", &FeatureExtractor::to_string);
  top.attr("FeatureExtractor") = base;

  m.def(
      "extractors",
      [] {
        py::dict d;
        for (const auto& name : feature_extractors().keys()) {
          const FeatureExtractorEntry& e = *feature_extractors().find(name);
          py::dict options;
          for (const auto& f : e.fields) options[py::str(f.name)] = f.default_text;
          d[py::str(name)] =
              py::dict(py::arg("transformers_type") = e.transformers_type,
                       py::arg("description") = e.description, py::arg("options") = options);
        }
        return d;
      },
      "The registered extractors: {name: {transformers_type, description, options: {name: "
      "default as text}}}, what ``alto features --extractor`` offers.");
  m.def(
      "create",
      [](const std::string& name, const py::kwargs& kwargs) {
        const FeatureExtractorEntry& entry = feature_extractors().at(name, "create");
        return std::const_pointer_cast<FeatureExtractor>(entry.create(option_values(kwargs, name)));
      },
      py::arg("name"),
      "Builds a registered extractor by name (\"kaldi-fbank\", \"mel\", ...) from keyword "
      "options: ``alto.features.create(\"mel\", sample_rate=22050, n_mels=80)``.");
  m.def(
      "create_from_text",
      [](const std::string& name, const std::map<std::string, std::string>& options) {
        const FeatureExtractorEntry& entry = feature_extractors().at(name, "create_from_text");
        return std::const_pointer_cast<FeatureExtractor>(
            entry.create(option_values_from_text(entry, options)));
      },
      py::arg("name"), py::arg("options"),
      "Builds a registered extractor from option text as ``alto features`` reads its flags: "
      "{\"n-mels\" or \"n_mels\" or an alias: \"80\"}, \"\" setting a boolean. "
      "``alto.features.create_from_text(\"mel\", {\"n-mels\": \"80\", \"f-max\": \"None\"})``.");

  py::class_<KaldiFbank, FeatureExtractor, std::shared_ptr<KaldiFbank>> kaldi_fbank(
      m, "KaldiFbank",
      ("Kaldi filterbank features equal to torchaudio.compliance.kaldi.fbank (its argument "
       "names and defaults).\n\ncompute(wave) -> [frames, num_mel_bins] float32." +
       options_doc<KaldiFbank::Options>())
          .c_str());
  bind_options_api(kaldi_fbank);
  kaldi_fbank.def(
      "compute",
      [](const KaldiFbank& e, const TensorArg& wave) {
        return e.compute(wave_of(wave, "KaldiFbank"));
      },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] (or [1, samples]) floating point at sample_frequency -> [frames, "
      "num_mel_bins (+1 with use_energy)] float32. Raises alto.Error for NaN/Inf or empty input.");

  py::class_<KaldiMfcc, FeatureExtractor, std::shared_ptr<KaldiMfcc>> kaldi_mfcc(
      m, "KaldiMfcc",
      ("Kaldi MFCCs equal to torchaudio.compliance.kaldi.mfcc.\n\ncompute(wave) -> [frames, "
       "num_ceps] float32." +
       options_doc<KaldiMfcc::Options>())
          .c_str());
  bind_options_api(kaldi_mfcc);
  kaldi_mfcc.def(
      "compute",
      [](const KaldiMfcc& e, const TensorArg& wave) {
        return e.compute(wave_of(wave, "KaldiMfcc"));
      },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] floating point -> [frames, num_ceps] float32.");

  py::class_<MelSpectrogram, FeatureExtractor, std::shared_ptr<MelSpectrogram>> mel_spectrogram(
      m, "MelSpectrogram",
      ("A mel spectrogram equal to torchaudio.transforms.MelSpectrogram (its arguments; the "
       "window is a periodic Hann; norm None is \"none\").\n\ncompute(wave) -> [n_mels, frames] "
       "float32 (linear power)." +
       options_doc<MelSpectrogram::Options>())
          .c_str());
  bind_options_api(mel_spectrogram);
  mel_spectrogram
      .def(
          "compute",
          [](const MelSpectrogram& e, const TensorArg& wave) {
            return e.compute(wave_of(wave, "MelSpectrogram"));
          },
          py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
          "wave: [samples] floating point -> [n_mels, frames] float32.")
      .def_property_readonly("mel_filters", &MelSpectrogram::mel_filters,
                             "[n_fft / 2 + 1, n_mels] float64, torchaudio's melscale_fbanks.");

  py::class_<WhisperFeatureExtractor, FeatureExtractor, std::shared_ptr<WhisperFeatureExtractor>>
      whisper_fe(m, "WhisperFeatureExtractor",
                 ("Whisper's log-mel spectrogram as transformers' WhisperFeatureExtractor "
                  "(preprocessor_config.json's field names).\n\ncompute(wave) -> [feature_size, "
                  "3000] for 30 s of padding/truncation." +
                  options_doc<WhisperFeatureExtractor::Options>())
                     .c_str());
  bind_options_api(whisper_fe);
  whisper_fe
      .def(
          "compute",
          [](const WhisperFeatureExtractor& e, const TensorArg& wave, bool long_form) {
            PaddingOptions p;
            if (long_form) {
              p.padding = PaddingOptions::Strategy::kLongest;
              p.truncation = false;
            }
            return e.compute(wave_of(wave, "WhisperFeatureExtractor"), p);
          },
          py::arg("wave"), py::arg("long_form") = false, py::call_guard<py::gil_scoped_release>(),
          "wave: [samples] -> [feature_size, frames]: chunk_length seconds of frames (3000), or "
          "with long_form=True samples / hop_length frames (no padding or truncation).")
      .def_property_readonly("mel_filters", &WhisperFeatureExtractor::mel_filters,
                             "[n_fft / 2 + 1, feature_size] float64, transformers' "
                             "mel_filter_bank.");

  py::class_<SeamlessM4TFeatureExtractor, FeatureExtractor,
             std::shared_ptr<SeamlessM4TFeatureExtractor>>
      seamless_fe(m, "SeamlessM4TFeatureExtractor",
                  ("SeamlessM4T / w2v-BERT 2.0 inputs as transformers' "
                   "SeamlessM4TFeatureExtractor." +
                   options_doc<SeamlessM4TFeatureExtractor::Options>())
                      .c_str());
  bind_options_api(seamless_fe);
  seamless_fe
      .def(
          "compute",
          [](const SeamlessM4TFeatureExtractor& e, const TensorArg& wave) {
            BatchFeature b;
            {
              py::gil_scoped_release release;
              b = e.compute(wave_of(wave, "SeamlessM4TFeatureExtractor"));
            }
            return batch_dict(b);
          },
          py::arg("wave"),
          "wave: [samples] -> {\"input_features\": [frames / stride, num_mel_bins * stride], "
          "\"attention_mask\": [frames / stride]} without a batch dimension.")
      .def(
          "fbank",
          [](const SeamlessM4TFeatureExtractor& e, const TensorArg& wave) {
            return e.fbank(wave_of(wave, "SeamlessM4TFeatureExtractor"));
          },
          py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
          "The log-mel fbank before normalisation and stacking: [frames, num_mel_bins].");

  py::class_<Wav2Vec2FeatureExtractor, FeatureExtractor, std::shared_ptr<Wav2Vec2FeatureExtractor>>
      wav2vec2_fe(m, "Wav2Vec2FeatureExtractor",
                  ("Wav2Vec2 / HuBERT / WavLM inputs as transformers' Wav2Vec2FeatureExtractor." +
                   options_doc<Wav2Vec2FeatureExtractor::Options>())
                      .c_str());
  bind_options_api(wav2vec2_fe);
  wav2vec2_fe.def(
      "compute",
      [](const Wav2Vec2FeatureExtractor& e, const TensorArg& wave) {
        return e.compute(wave_of(wave, "Wav2Vec2FeatureExtractor"));
      },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] -> input_values [samples] (zero mean, unit variance with do_normalize).");

  py::class_<Stft, std::shared_ptr<Stft>>(
      m, "Stft",
      ("torch.stft on FFTW (its argument names; window is a name, \"hann\" by default, "
       "periodic like torch.hann_window).\n\ncompute(wave) -> [(batch,) n_freq, frames], "
       "complex64, or float32 with power=1 (magnitude) / 2 (power)." +
       options_doc<StftOptions>())
          .c_str())
      .def(py::init([](const py::kwargs& kwargs) {
             return std::make_shared<Stft>(options_from<StftOptions>(kwargs));
           }),
           "Builds the transform from keyword options; errors name the field.")
      .def(
          "compute",
          [](const Stft& s, const TensorArg& wave) {
            return s.compute(floating(wave.tensor, "Stft: wave", 1, 2));
          },
          py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
          "wave: [samples] or [batch, samples] floating point -> [(batch,) n_freq, frames].")
      .def(
          "__call__",
          [](const Stft& s, const TensorArg& wave) {
            return s.compute(floating(wave.tensor, "Stft: wave", 1, 2));
          },
          py::arg("wave"), py::call_guard<py::gil_scoped_release>(), "Same as compute().")
      .def_property_readonly(
          "window", [](const Stft& s) { return torch::tensor(s.window()); },
          "The window as applied (length n_fft), float32.")
      .def_property_readonly(
          "options",
          [](const Stft& s) { return options_dict(StftOptions::schema().values(s.options())); },
          "The options as a dict of keyword arguments.")
      .def("__repr__", [](const Stft& s) { return s.options().to_string(); });

  py::class_<InverseStft, std::shared_ptr<InverseStft>>(
      m, "InverseStft",
      ("torch.istft: overlap-add of the inverse transforms divided by the summed squared window. "
       "Takes Stft's options (power must be None; onesided input only)." +
       options_doc<StftOptions>())
          .c_str())
      .def(py::init([](const py::kwargs& kwargs) {
             return std::make_shared<InverseStft>(options_from<StftOptions>(kwargs));
           }),
           "Builds the transform from keyword options; errors name the field.")
      .def(
          "compute",
          [](const InverseStft& s, const TensorArg& spectrum, std::optional<int64_t> length) {
            return s.compute(spectrum.tensor, length);
          },
          py::arg("spectrum"), py::arg("length") = py::none(),
          py::call_guard<py::gil_scoped_release>(),
          "spectrum: [(batch,) n_fft / 2 + 1, frames] complex -> [(batch,) samples] float32, "
          "trimmed or zero-padded to ``length`` when given.");

  m.def(
      "mel_filter_bank",
      [](int num_frequency_bins, int num_mel_filters, double min_frequency, double max_frequency,
         int sampling_rate, const std::string& norm, const std::string& mel_scale,
         bool triangularize_in_mel_space) {
        MelFilterBankOptions o;
        o.num_frequency_bins = num_frequency_bins;
        o.num_mel_filters = num_mel_filters;
        o.min_frequency = min_frequency;
        o.max_frequency = max_frequency;
        o.sampling_rate = sampling_rate;
        o.norm = parse_mel_norm(norm);
        o.mel_scale = parse_mel_scale(mel_scale);
        o.triangularize_in_mel_space = triangularize_in_mel_space;
        return mel_filter_bank(o);
      },
      py::kw_only(), py::arg("num_frequency_bins") = 201, py::arg("num_mel_filters") = 80,
      py::arg("min_frequency") = 0.0, py::arg("max_frequency") = 8000.0,
      py::arg("sampling_rate") = 16000, py::arg("norm") = "none", py::arg("mel_scale") = "htk",
      py::arg("triangularize_in_mel_space") = false,
      "transformers.audio_utils.mel_filter_bank (norm \"none\" | \"slaney\", mel_scale \"htk\" | "
      "\"slaney\" | \"kaldi\") -> float64 [num_frequency_bins, num_mel_filters].");

  m.def(
      "make_window",
      [](const std::string& window, int length, bool periodic, double blackman_coeff) {
        return torch::tensor(
            make_window(parse_window_type(window), length, periodic, blackman_coeff));
      },
      py::arg("window"), py::arg("length"), py::arg("periodic") = true,
      py::arg("blackman_coeff") = 0.42,
      "A float32 window as torch.*_window builds it: \"hann\", \"hamming\", \"povey\", "
      "\"blackman\", \"rectangular\"; periodic=False is the symmetric form Kaldi uses.");
}

}  // namespace alto::python
