// The `alto` Python module: one PYBIND11_MODULE, one bind_* per library module.

#include "alto/core/threading.h"
#include "bindings/common.h"

PYBIND11_MODULE(alto, m) {
  namespace py = pybind11;
  m.doc() = R"doc(alto: audio language model toolkit (C++), from Python.

Tensors cross without copies: every function takes torch.Tensor or numpy.ndarray and returns
torch.Tensor (call .numpy() on a CPU result for a numpy view of the same memory). Errors are
alto.Error (subclasses InvalidArgument, IoError, Unsupported) with alto's message. The GIL is
released during long C++ work and the objects are safe to use from several threads.

Modules: alto (audio I/O, safetensors, FeatureExtractor, AudioTokenizer, tokenizers::BpeTokenizer),
alto.features, alto.models, alto.tokenizers.)doc";
  // torch's Python types (torch.Tensor) must exist before a tensor crosses.
  py::module_::import("torch");
  alto::python::bind_core(m);
  alto::python::bind_audio(m);
  alto::python::bind_features(m);
  alto::python::bind_models(m);
  alto::python::bind_tokenizers(m);
  alto::python::bind_audio_tokenizer(m);
  // Debian's libtorch starts with one intra-op thread; alto's entry points set all cores.
  alto::set_num_threads(alto::default_num_threads());
  m.attr("__version__") = ALTO_VERSION;
}
