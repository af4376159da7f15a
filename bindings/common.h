#pragma once
// What every binding file shares: torch's own Python conversions (so a tensor crosses as the same
// storage, never a copy), an argument type that takes torch.Tensor or numpy.ndarray, and the
// checks that turn a wrong dtype or rank into an alto.Error naming the argument.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/python.h>

#include <optional>
#include <string>

#include "alto/core/error.h"
#include "alto/core/options.h"
#include "alto/core/registry.h"
#include "alto/models/audio_language_model.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/generation.h"

namespace alto::python {

namespace py = pybind11;

/// A tensor argument given as torch.Tensor or numpy.ndarray. A numpy array is wrapped by
/// torch.from_numpy's own code, so the tensor shares its memory.
struct TensorArg {
  torch::Tensor tensor;
  operator const torch::Tensor&() const { return tensor; }  // NOLINT: an argument is a tensor
};

/// `tensor` when it is a real floating-point tensor; else alto::InvalidArgument naming `what`.
torch::Tensor floating(const torch::Tensor& tensor, const std::string& what);
/// The same, also requiring one of the ranks in [min_rank, max_rank].
torch::Tensor floating(const torch::Tensor& tensor, const std::string& what, int64_t min_rank,
                       int64_t max_rank);
/// Argument `wave` of `caller` ("Whisper.transcribe") as mono samples [samples]: floating point,
/// [samples] or [1, samples]; errors name the caller and say to load with mono=True.
torch::Tensor mono_wave(const torch::Tensor& wave, const std::string& caller);
/// alto::InvalidArgument naming `what` and the first NaN/Inf position unless all are finite.
void check_finite(const torch::Tensor& tensor, const std::string& what);
/// An integer tensor (codes, token ids) as int64; else alto::InvalidArgument naming `what`.
torch::Tensor integral(const torch::Tensor& tensor, const std::string& what, int64_t rank);

/// Option values (core/options.h) as Python gives and takes them: None, bool, int, float, str.
/// A value of another type is an alto::InvalidArgument naming `where`.
OptionValue option_value(py::handle value, const std::string& where);
/// Keyword arguments as option values, errors naming `type`.`key`.
OptionValues option_values(const py::kwargs& kwargs, const std::string& type);
py::object py_value(const OptionValue& value);
/// {name: value} in the given order.
py::dict options_dict(const std::vector<std::pair<std::string, OptionValue>>& values);

/// A registry's entries as {key: description}, in key order.
template <typename Entry>
py::dict registry_descriptions(const Registry<Entry>& registry) {
  py::dict d;
  for (const auto& key : registry.keys()) d[py::str(key)] = registry.find(key)->description;
  return d;
}

/// Registers submodule `name` of `parent` in sys.modules, so `import alto.features` works.
py::module_ submodule(py::module_& parent, const char* name, const char* doc);

/// `base` with the keyword arguments that name generation_config.json keys applied
/// (eos_token_id: an int or a list of ints); errors name `caller`.
models::GenerationConfig generation_config(models::GenerationConfig base, const py::kwargs& kwargs,
                                           const std::string& caller);
/// transformers' conversation format: [{"role", "content": str | [{"type": "text", "text"} |
/// {"type": "audio", "audio" (samples at `rate`) | "path" | "audio_url"} |
/// {"type": "codes", "codes": int [num_codebooks, frames]}]}].
std::vector<models::ChatMessage> conversation_of(const py::list& conversation, int rate);

/// A forward pass's named intermediates as {name: tensor} in the order they were made.
py::dict intermediates_dict(const models::Intermediates& intermediates);

void bind_core(py::module_& m);
void bind_audio(py::module_& m);
void bind_features(py::module_& m);
void bind_models(py::module_& m);
/// Into alto.models, from bind_models.
void bind_audio_language_models(py::module_& m);
/// Into alto.models, from bind_models.
void bind_speech_to_text(py::module_& m);
/// Into alto.models, from bind_models.
void bind_csm(py::module_& m);
void bind_tokenizers(py::module_& m);
void bind_audio_tokenizer(py::module_& m);

}  // namespace alto::python

namespace pybind11::detail {

template <>
struct type_caster<alto::python::TensorArg> {
  PYBIND11_TYPE_CASTER(alto::python::TensorArg, _("torch.Tensor | numpy.ndarray"));

  bool load(handle source, bool /*convert*/);
};

}  // namespace pybind11::detail
