// The `alto` Python module: one PYBIND11_MODULE, one bind_* per library module.

#include <dlfcn.h>

#include <filesystem>
#include <string>

#include "alto/core/threading.h"
#include "bindings/common.h"

namespace {

// The folder beside this .so that holds alto's pure-Python submodules (alto/datasets): as the
// module's __path__ it makes `import alto.datasets` and `python3 -m alto.datasets` work while
// `alto` itself stays this one extension module.
std::string python_package_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&python_package_dir), &info) == 0 || !info.dli_fname)
    return {};
  return (std::filesystem::path(info.dli_fname).parent_path() / "alto").string();
}

}  // namespace

PYBIND11_MODULE(alto, m) {
  namespace py = pybind11;
  m.doc() = R"doc(alto: audio language model toolkit (C++), from Python.

Tensors cross without copies: every function takes torch.Tensor or numpy.ndarray and returns
torch.Tensor (call .numpy() on a CPU result for a numpy view of the same memory). Errors are
alto.Error (subclasses InvalidArgument, IoError, Unsupported) with alto's message. The GIL is
released during long C++ work and the objects are safe to use from several threads.

Modules: alto (audio I/O, safetensors, FeatureExtractor, AudioTokenizer, tokenizers::BpeTokenizer),
alto.features, alto.models, alto.tokenizers; alto.datasets (corpus jobs on Dask, pure Python).)doc";
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
  py::list path;
  if (const std::string dir = python_package_dir(); !dir.empty()) path.append(dir);
  m.attr("__path__") = path;
}
