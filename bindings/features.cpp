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

/// One options field as a keyword argument: how to set it from Python and read it back.
template <typename Options>
struct Field {
  std::string name;
  std::function<void(Options&, py::handle)> set;
  std::function<py::object(const Options&)> get;
};

template <typename Options>
using Fields = std::vector<Field<Options>>;

template <typename Options, typename T, typename Base>
Field<Options> field(const char* name, T Base::*member) {
  static_assert(std::is_base_of_v<Base, Options>);
  return {name, [member](Options& o, py::handle h) { o.*member = py::cast<T>(h); },
          [member](const Options& o) { return py::cast(o.*member); }};
}

/// An enum field spelled as the reference library's string ("povey", "reflect", ...).
template <typename Options, typename E, typename Base>
Field<Options> choice(const char* name, E Base::*member, E (*parse)(const std::string&),
                      std::string (*print)(E)) {
  return {name, [member, parse](Options& o, py::handle h) { o.*member = parse(py::cast<std::string>(h)); },
          [member, print](const Options& o) { return py::cast(print(o.*member)); }};
}

PaddingSide parse_padding_side(const std::string& name) {
  if (name == "right") return PaddingSide::kRight;
  if (name == "left") return PaddingSide::kLeft;
  throw InvalidArgument("padding_side must be \"right\" or \"left\", got \"" + name + "\"");
}
std::string padding_side_name(PaddingSide side) {
  return side == PaddingSide::kRight ? "right" : "left";
}

/// Options from keyword arguments; an unknown keyword or a value of the wrong type is an
/// alto.InvalidArgument naming the field.
template <typename Options>
Options options_from(const Fields<Options>& fields, const py::kwargs& kwargs, const char* type) {
  Options o;
  for (auto item : kwargs) {
    const std::string key = py::cast<std::string>(item.first);
    auto it = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.name == key; });
    if (it == fields.end()) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f.name;
      throw InvalidArgument(std::string(type) + " has no option '" + key + "' (options: " + known +
                            ")");
    }
    try {
      it->set(o, item.second);
    } catch (const py::cast_error&) {
      throw InvalidArgument(std::string(type) + "." + key + ": wrong type " +
                            py::cast<std::string>(py::str(py::type::of(item.second).attr("__name__"))) +
                            ", expected the default's type (" +
                            py::cast<std::string>(py::repr(it->get(Options{}))) + ")");
    }
  }
  return o;
}

template <typename Options>
py::dict options_dict(const Fields<Options>& fields, const Options& o) {
  py::dict d;
  for (const auto& f : fields) d[py::str(f.name)] = f.get(o);
  return d;
}

/// "Options (defaults): a=1, b='x', ..." for a class docstring.
template <typename Options>
std::string options_doc(const Fields<Options>& fields) {
  const Options defaults;
  std::string doc = "\n\nKeyword options (with their defaults):\n    ";
  size_t column = 4;
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string item = fields[i].name + "=" + py::cast<std::string>(py::repr(fields[i].get(defaults)));
    if (i + 1 < fields.size()) item += ", ";
    if (column + item.size() > 96) {
      doc += "\n    ";
      column = 4;
    }
    doc += item;
    column += item.size();
  }
  return doc;
}

template <typename Options>
void add_kaldi_fields(Fields<Options>& f) {
  f.push_back(field<Options>("sample_frequency", &KaldiFbankOptions::sample_frequency));
  f.push_back(field<Options>("frame_length", &KaldiFbankOptions::frame_length));
  f.push_back(field<Options>("frame_shift", &KaldiFbankOptions::frame_shift));
  f.push_back(field<Options>("dither", &KaldiFbankOptions::dither));
  f.push_back(field<Options>("dither_seed", &KaldiFbankOptions::dither_seed));
  f.push_back(field<Options>("preemphasis_coefficient", &KaldiFbankOptions::preemphasis_coefficient));
  f.push_back(field<Options>("remove_dc_offset", &KaldiFbankOptions::remove_dc_offset));
  f.push_back(choice<Options>("window_type", &KaldiFbankOptions::window_type, parse_window_type,
                              static_cast<std::string (*)(WindowType)>(to_string)));
  f.push_back(field<Options>("blackman_coeff", &KaldiFbankOptions::blackman_coeff));
  f.push_back(field<Options>("round_to_power_of_two", &KaldiFbankOptions::round_to_power_of_two));
  f.push_back(field<Options>("snip_edges", &KaldiFbankOptions::snip_edges));
  f.push_back(field<Options>("energy_floor", &KaldiFbankOptions::energy_floor));
  f.push_back(field<Options>("raw_energy", &KaldiFbankOptions::raw_energy));
  f.push_back(field<Options>("use_energy", &KaldiFbankOptions::use_energy));
  f.push_back(field<Options>("htk_compat", &KaldiFbankOptions::htk_compat));
  f.push_back(field<Options>("low_freq", &KaldiFbankOptions::low_freq));
  f.push_back(field<Options>("high_freq", &KaldiFbankOptions::high_freq));
  f.push_back(field<Options>("num_mel_bins", &KaldiFbankOptions::num_mel_bins));
  f.push_back(field<Options>("subtract_mean", &KaldiFbankOptions::subtract_mean));
  f.push_back(field<Options>("min_duration", &KaldiFbankOptions::min_duration));
}

Fields<KaldiFbankOptions> fbank_fields() {
  Fields<KaldiFbankOptions> f;
  add_kaldi_fields(f);
  f.push_back(field<KaldiFbankOptions>("use_log_fbank", &KaldiFbankOptions::use_log_fbank));
  f.push_back(field<KaldiFbankOptions>("use_power", &KaldiFbankOptions::use_power));
  return f;
}

Fields<KaldiMfccOptions> mfcc_fields() {
  Fields<KaldiMfccOptions> f;
  add_kaldi_fields(f);
  f.push_back(field<KaldiMfccOptions>("num_ceps", &KaldiMfccOptions::num_ceps));
  f.push_back(field<KaldiMfccOptions>("cepstral_lifter", &KaldiMfccOptions::cepstral_lifter));
  return f;
}

Fields<MelSpectrogramOptions> mel_spectrogram_fields() {
  using O = MelSpectrogramOptions;
  return {field<O>("sample_rate", &O::sample_rate),
          field<O>("n_fft", &O::n_fft),
          field<O>("win_length", &O::win_length),
          field<O>("hop_length", &O::hop_length),
          field<O>("f_min", &O::f_min),
          field<O>("f_max", &O::f_max),
          field<O>("n_mels", &O::n_mels),
          field<O>("power", &O::power),
          field<O>("normalized", &O::normalized),
          field<O>("center", &O::center),
          choice<O>("pad_mode", &O::pad_mode, parse_pad_mode,
                    static_cast<std::string (*)(PadMode)>(to_string)),
          choice<O>("norm", &O::norm, parse_mel_norm,
                    static_cast<std::string (*)(MelNorm)>(to_string)),
          choice<O>("mel_scale", &O::mel_scale, parse_mel_scale,
                    static_cast<std::string (*)(MelScale)>(to_string))};
}

Fields<WhisperFeatureExtractorOptions> whisper_fields() {
  using O = WhisperFeatureExtractorOptions;
  return {field<O>("feature_size", &O::feature_size),
          field<O>("sampling_rate", &O::sampling_rate),
          field<O>("hop_length", &O::hop_length),
          field<O>("chunk_length", &O::chunk_length),
          field<O>("n_fft", &O::n_fft),
          field<O>("padding_value", &O::padding_value),
          field<O>("dither", &O::dither),
          field<O>("dither_seed", &O::dither_seed),
          field<O>("return_attention_mask", &O::return_attention_mask),
          field<O>("do_normalize", &O::do_normalize),
          choice<O>("padding_side", &O::padding_side, parse_padding_side, padding_side_name),
          field<O>("clamp_dynamic_range", &O::clamp_dynamic_range)};
}

Fields<SeamlessM4TFeatureExtractorOptions> seamless_fields() {
  using O = SeamlessM4TFeatureExtractorOptions;
  return {field<O>("feature_size", &O::feature_size),
          field<O>("sampling_rate", &O::sampling_rate),
          field<O>("num_mel_bins", &O::num_mel_bins),
          field<O>("padding_value", &O::padding_value),
          field<O>("stride", &O::stride),
          field<O>("return_attention_mask", &O::return_attention_mask),
          field<O>("do_normalize_per_mel_bins", &O::do_normalize_per_mel_bins),
          choice<O>("padding_side", &O::padding_side, parse_padding_side, padding_side_name)};
}

Fields<Wav2Vec2FeatureExtractorOptions> wav2vec2_fields() {
  using O = Wav2Vec2FeatureExtractorOptions;
  return {field<O>("feature_size", &O::feature_size),
          field<O>("sampling_rate", &O::sampling_rate),
          field<O>("padding_value", &O::padding_value),
          field<O>("do_normalize", &O::do_normalize),
          field<O>("return_attention_mask", &O::return_attention_mask),
          choice<O>("padding_side", &O::padding_side, parse_padding_side, padding_side_name)};
}

Fields<StftOptions> stft_fields() {
  using O = StftOptions;
  return {field<O>("n_fft", &O::n_fft),
          field<O>("hop_length", &O::hop_length),
          field<O>("win_length", &O::win_length),
          choice<O>("window", &O::window, parse_window_type,
                    static_cast<std::string (*)(WindowType)>(to_string)),
          field<O>("periodic", &O::periodic),
          field<O>("center", &O::center),
          choice<O>("pad_mode", &O::pad_mode, parse_pad_mode,
                    static_cast<std::string (*)(PadMode)>(to_string)),
          field<O>("normalized", &O::normalized),
          field<O>("onesided", &O::onesided),
          field<O>("power", &O::power)};
}

/// transformers' `padding` argument: None (the extractor's default), a bool or a strategy name.
PaddingOptions::Strategy padding_strategy(const py::object& padding) {
  if (padding.is_none()) return PaddingOptions::Strategy::kDefault;
  if (py::isinstance<py::bool_>(padding))
    return py::cast<bool>(padding) ? PaddingOptions::Strategy::kLongest
                                   : PaddingOptions::Strategy::kDoNotPad;
  if (py::isinstance<py::str>(padding))
    return PaddingOptions::parse_strategy(py::cast<std::string>(padding));
  throw InvalidArgument("padding must be None, a bool or \"longest\" / \"max_length\" / "
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

template <typename Extractor, typename Options, typename Holder>
void bind_options_api(py::class_<Extractor, FeatureExtractor, Holder>& cls,
                      const Fields<Options>& fields, const char* type) {
  cls.def(py::init([fields, type](const py::kwargs& kwargs) {
            return std::make_shared<Extractor>(options_from(fields, kwargs, type));
          }),
          "Builds the extractor from keyword options (see the class docstring); the options "
          "are validated here and errors name the field.")
      .def_property_readonly(
          "options", [fields](const Extractor& e) { return options_dict(fields, e.options()); },
          "The options as a dict of keyword arguments (pass it back with **).");
}

}  // namespace

void bind_features(py::module_& top) {
  py::module_ m = submodule(top, "features",
                            "Audio features equal to transformers' and torchaudio's: STFT, mel "
                            "spectrograms, Kaldi fbank/MFCC, Whisper / SeamlessM4T / Wav2Vec2 "
                            "extractors.");

  using Holder = std::shared_ptr<FeatureExtractor>;
  py::class_<FeatureExtractor, Holder> base(m, "FeatureExtractor", R"doc(The common face of alto's feature extractors.

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
            return Holder(FeatureExtractor::from_pretrained(dir));
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

  const auto fbank = fbank_fields();
  py::class_<KaldiFbank, FeatureExtractor, std::shared_ptr<KaldiFbank>> kaldi_fbank(
      m, "KaldiFbank",
      ("Kaldi filterbank features equal to torchaudio.compliance.kaldi.fbank (its argument "
       "names and defaults).\n\ncompute(wave) -> [frames, num_mel_bins] float32." +
       options_doc(fbank))
          .c_str());
  bind_options_api(kaldi_fbank, fbank, "KaldiFbank");
  kaldi_fbank.def(
      "compute",
      [](const KaldiFbank& e, const TensorArg& wave) { return e.compute(wave_of(wave, "KaldiFbank")); },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] (or [1, samples]) floating point at sample_frequency -> [frames, "
      "num_mel_bins (+1 with use_energy)] float32. Raises alto.Error for NaN/Inf or empty input.");

  const auto mfcc = mfcc_fields();
  py::class_<KaldiMfcc, FeatureExtractor, std::shared_ptr<KaldiMfcc>> kaldi_mfcc(
      m, "KaldiMfcc",
      ("Kaldi MFCCs equal to torchaudio.compliance.kaldi.mfcc.\n\ncompute(wave) -> [frames, "
       "num_ceps] float32." + options_doc(mfcc))
          .c_str());
  bind_options_api(kaldi_mfcc, mfcc, "KaldiMfcc");
  kaldi_mfcc.def(
      "compute",
      [](const KaldiMfcc& e, const TensorArg& wave) { return e.compute(wave_of(wave, "KaldiMfcc")); },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] floating point -> [frames, num_ceps] float32.");

  const auto mel = mel_spectrogram_fields();
  py::class_<MelSpectrogram, FeatureExtractor, std::shared_ptr<MelSpectrogram>> mel_spectrogram(
      m, "MelSpectrogram",
      ("A mel spectrogram equal to torchaudio.transforms.MelSpectrogram (its arguments; the "
       "window is a periodic Hann; norm None is \"none\").\n\ncompute(wave) -> [n_mels, frames] "
       "float32 (linear power)." + options_doc(mel))
          .c_str());
  bind_options_api(mel_spectrogram, mel, "MelSpectrogram");
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

  const auto whisper = whisper_fields();
  py::class_<WhisperFeatureExtractor, FeatureExtractor, std::shared_ptr<WhisperFeatureExtractor>>
      whisper_fe(m, "WhisperFeatureExtractor",
                 ("Whisper's log-mel spectrogram as transformers' WhisperFeatureExtractor "
                  "(preprocessor_config.json's field names).\n\ncompute(wave) -> [feature_size, "
                  "3000] for 30 s of padding/truncation." + options_doc(whisper))
                     .c_str());
  bind_options_api(whisper_fe, whisper, "WhisperFeatureExtractor");
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

  const auto seamless = seamless_fields();
  py::class_<SeamlessM4TFeatureExtractor, FeatureExtractor,
             std::shared_ptr<SeamlessM4TFeatureExtractor>>
      seamless_fe(m, "SeamlessM4TFeatureExtractor",
                  ("SeamlessM4T / w2v-BERT 2.0 inputs as transformers' "
                   "SeamlessM4TFeatureExtractor." + options_doc(seamless))
                      .c_str());
  bind_options_api(seamless_fe, seamless, "SeamlessM4TFeatureExtractor");
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

  const auto wav2vec2 = wav2vec2_fields();
  py::class_<Wav2Vec2FeatureExtractor, FeatureExtractor, std::shared_ptr<Wav2Vec2FeatureExtractor>>
      wav2vec2_fe(m, "Wav2Vec2FeatureExtractor",
                  ("Wav2Vec2 / HuBERT / WavLM inputs as transformers' Wav2Vec2FeatureExtractor." +
                   options_doc(wav2vec2))
                      .c_str());
  bind_options_api(wav2vec2_fe, wav2vec2, "Wav2Vec2FeatureExtractor");
  wav2vec2_fe.def(
      "compute",
      [](const Wav2Vec2FeatureExtractor& e, const TensorArg& wave) {
        return e.compute(wave_of(wave, "Wav2Vec2FeatureExtractor"));
      },
      py::arg("wave"), py::call_guard<py::gil_scoped_release>(),
      "wave: [samples] -> input_values [samples] (zero mean, unit variance with do_normalize).");

  const auto stft = stft_fields();
  py::class_<Stft, std::shared_ptr<Stft>>(
      m, "Stft",
      ("torch.stft on FFTW (its argument names; window is a name, \"hann\" by default, "
       "periodic like torch.hann_window).\n\ncompute(wave) -> [(batch,) n_freq, frames], "
       "complex64, or float32 with power=1 (magnitude) / 2 (power)." + options_doc(stft))
          .c_str())
      .def(py::init([stft](const py::kwargs& kwargs) {
             return std::make_shared<Stft>(options_from(stft, kwargs, "Stft"));
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
          "options", [stft](const Stft& s) { return options_dict(stft, s.options()); },
          "The options as a dict of keyword arguments.")
      .def("__repr__", [](const Stft& s) { return s.options().to_string(); });

  py::class_<InverseStft, std::shared_ptr<InverseStft>>(
      m, "InverseStft",
      ("torch.istft: overlap-add of the inverse transforms divided by the summed squared window. "
       "Takes Stft's options (power must be None; onesided input only)." + options_doc(stft))
          .c_str())
      .def(py::init([stft](const py::kwargs& kwargs) {
             return std::make_shared<InverseStft>(options_from(stft, kwargs, "InverseStft"));
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
        return torch::tensor(make_window(parse_window_type(window), length, periodic, blackman_coeff));
      },
      py::arg("window"), py::arg("length"), py::arg("periodic") = true,
      py::arg("blackman_coeff") = 0.42,
      "A float32 window as torch.*_window builds it: \"hann\", \"hamming\", \"povey\", "
      "\"blackman\", \"rectangular\"; periodic=False is the symmetric form Kaldi uses.");
}

}  // namespace alto::python
