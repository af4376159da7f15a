// core/: the error family, safetensors, threads; and the tensor argument every binding shares.

#include <torch/csrc/utils/tensor_numpy.h>

#include <map>
#include <utility>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"
#include "bindings/common.h"

namespace pybind11::detail {

bool type_caster<alto::python::TensorArg>::load(handle source, bool) {
  if (THPVariable_Check(source.ptr())) {
    value.tensor = THPVariable_Unpack(source.ptr());
    // Refused here, for every argument, before torch's own kernels meet them.
    ALTO_CHECK(value.tensor.layout() == torch::kStrided, "alto takes dense tensors; got a ",
               value.tensor.layout(), " tensor (call .to_dense() first)");
    ALTO_CHECK(!value.tensor.is_meta(), "alto takes tensors with data; got a meta tensor of shape ",
               value.tensor.sizes());
    return true;
  }
  if (isinstance<array>(source)) {
    // torch.from_numpy's conversion: the tensor keeps the array alive and shares its memory.
    try {
      value.tensor = torch::utils::tensor_from_numpy(source.ptr(), /*warn_if_not_writeable=*/false);
    } catch (const std::exception& e) {
      throw alto::InvalidArgument(std::string("cannot use this numpy.ndarray as a tensor: ") +
                                  e.what());
    }
    return true;
  }
  return false;
}

}  // namespace pybind11::detail

namespace alto::python {

namespace {

std::string dtype_text(const torch::Tensor& t) {
  return std::string(c10::toString(t.scalar_type()));
}

}  // namespace

OptionValue option_value(py::handle h, const std::string& where) {
  if (h.is_none()) return std::monostate{};
  if (py::isinstance<py::bool_>(h)) return py::cast<bool>(h);
  if (py::isinstance<py::int_>(h)) return py::cast<int64_t>(h);
  if (py::isinstance<py::float_>(h)) return py::cast<double>(h);
  if (py::isinstance<py::str>(h)) return py::cast<std::string>(h);
  throw InvalidArgument(where + ": wrong type " +
                        py::cast<std::string>(py::str(py::type::of(h).attr("__name__"))) +
                        " (expected None, bool, int, float or str)");
}

OptionValues option_values(const py::kwargs& kwargs, const std::string& type) {
  OptionValues values;
  for (auto item : kwargs) {
    const std::string key = py::cast<std::string>(item.first);
    values[key] = option_value(item.second, type + "." + key);
  }
  return values;
}

py::object py_value(const OptionValue& v) {
  struct ToPython {
    py::object operator()(std::monostate) const { return py::none(); }
    py::object operator()(bool b) const { return py::bool_(b); }
    py::object operator()(int64_t i) const { return py::int_(i); }
    py::object operator()(double d) const { return py::float_(d); }
    py::object operator()(const std::string& s) const { return py::str(s); }
  };
  return std::visit(ToPython{}, v);
}

py::dict options_dict(const std::vector<std::pair<std::string, OptionValue>>& values) {
  py::dict d;
  for (const auto& [name, value] : values) d[py::str(name)] = py_value(value);
  return d;
}

torch::Tensor floating(const torch::Tensor& tensor, const std::string& what) {
  ALTO_CHECK(tensor.defined(), what, ": got an undefined tensor");
  ALTO_CHECK(tensor.is_floating_point(), what, ": expected a floating-point tensor, got ",
             dtype_text(tensor));
  return tensor;
}

torch::Tensor floating(const torch::Tensor& tensor, const std::string& what, int64_t min_rank,
                       int64_t max_rank) {
  floating(tensor, what);
  ALTO_CHECK(tensor.dim() >= min_rank && tensor.dim() <= max_rank, what, ": expected ",
             min_rank == max_rank ? std::to_string(min_rank)
                                  : std::to_string(min_rank) + " to " + std::to_string(max_rank),
             " dimensions, got shape ", tensor.sizes());
  return tensor;
}

torch::Tensor mono_wave(const torch::Tensor& wave, const std::string& caller) {
  torch::Tensor x = floating(wave, caller + ": wave", 1, 2);
  if (x.dim() == 2) {
    ALTO_CHECK(x.size(0) == 1, caller, ": expected mono audio [samples], got shape ", x.sizes(),
               " (load with mono=True)");
    x = x[0];
  }
  return x;
}

void check_finite(const torch::Tensor& tensor, const std::string& what) {
  const torch::Tensor bad = torch::logical_not(torch::isfinite(tensor)).flatten().nonzero();
  ALTO_CHECK(bad.numel() == 0, what, ": contains NaN or Inf (first at flat index ",
             bad.numel() ? bad[0].item<int64_t>() : 0, ")");
}

torch::Tensor integral(const torch::Tensor& tensor, const std::string& what, int64_t rank) {
  ALTO_CHECK(tensor.defined(), what, ": got an undefined tensor");
  ALTO_CHECK(
      !tensor.is_floating_point() && !tensor.is_complex() && tensor.scalar_type() != torch::kBool,
      what, ": expected an integer tensor, got ", dtype_text(tensor));
  ALTO_CHECK(rank < 0 || tensor.dim() == rank, what, ": expected ", rank, " dimensions, got shape ",
             tensor.sizes());
  return tensor.to(torch::kInt64);
}

py::module_ submodule(py::module_& parent, const char* name, const char* doc) {
  py::module_ child = parent.def_submodule(name, doc);
  py::module_::import("sys").attr("modules")[child.attr("__name__")] = child;
  return child;
}

namespace {

// alto.InvalidArgument is also a ValueError, so code written against plain Python still catches
// it; RuntimeError and ValueError share CPython's instance layout, so both can be bases.
py::object new_exception(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("alto.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  py::object result = py::reinterpret_steal<py::object>(type);
  m.attr(name) = result;
  return result;
}

}  // namespace

void bind_core(py::module_& m) {
  static py::object error = new_exception(
      m, "Error", py::make_tuple(py::handle(PyExc_RuntimeError)),
      "Every failure alto detects: the message names the file, field or tensor and what was "
      "expected.");
  static py::object invalid = new_exception(
      m, "InvalidArgument", py::make_tuple(error, py::handle(PyExc_ValueError)),
      "An option or argument has an impossible value (wrong dtype, rank, shape, NaN, ...).");
  static py::object io = new_exception(m, "IoError", py::make_tuple(error),
                                       "A file is missing, unreadable, truncated or corrupt.");
  static py::object out_of_memory = new_exception(
      m, "OutOfMemory", py::make_tuple(error, py::handle(PyExc_MemoryError)),
      "Memory for the work asked could not be had; the message says how much was asked for.");
  static py::object unsupported = new_exception(
      m, "Unsupported", py::make_tuple(error),
      "The input is valid but alto (or the library it delegates to) cannot handle it.");
  // Mapped once for every binding; the most derived C++ type is caught first.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid.ptr(), e.what());
    } catch (const IoError& e) {
      PyErr_SetString(io.ptr(), e.what());
    } catch (const Unsupported& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(out_of_memory.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const std::exception& e) {
      // libtorch's allocator and std::bad_alloc; anything else goes on to pybind's own.
      const std::optional<OutOfMemory> translated = as_out_of_memory(e);
      if (!translated) throw;
      PyErr_SetString(out_of_memory.ptr(), translated->what());
    }
  });

  m.def("set_num_threads", &set_num_threads, py::arg("threads"),
        "Threads for alto's own parallel work, libtorch's intra-op pool (shared with torch in "
        "this process) and the BLAS. alto sets all cores on import.");
  m.def("num_threads", &num_threads, "The thread count set_num_threads last set.");
  m.def("default_num_threads", &default_num_threads, "All cores of this machine.");
  m.def("cached_activation_bytes", &cached_activation_bytes,
        "Bytes of freed large-activation memory alto keeps for reuse (long codec signals).");
  m.def("activation_cache_limit", &activation_cache_limit,
        "The most freed activation memory alto keeps, in bytes (default 1 GiB).");
  m.def("set_activation_cache_limit", &set_activation_cache_limit, py::arg("bytes"),
        "Sets the most freed activation memory alto keeps (0 keeps none).");
  m.def("release_activation_cache", &release_activation_cache,
        "Returns the kept activation memory to the operating system.");
  m.def("keep_freed_memory", &keep_freed_memory,
        "Tunes glibc's malloc for tensor work in this process (blocks up to 32 MiB from the heap, "
        "up to 1 GiB of freed heap kept): large outputs reuse pages already faulted in. A "
        "process-wide choice alto never makes on import; False where the C library is not "
        "glibc.");

  m.def(
      "as_tensor", [](const TensorArg& x) { return x.tensor; }, py::arg("x"),
      "The tensor alto's functions see for ``x``: a torch.Tensor as it is, a numpy.ndarray as a "
      "zero-copy view (torch.from_numpy's conversion; same memory, same strides).");

  m.def(
      "load_safetensors",
      [](const std::string& path, bool return_metadata) -> py::object {
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        std::map<std::string, std::string> metadata;
        {
          py::gil_scoped_release release;
          const SafetensorsCheckpoint checkpoint(path);
          for (const std::string& name : checkpoint.names())
            tensors.emplace_back(name, checkpoint.tensor(name));
          metadata = checkpoint.metadata();
        }
        py::dict result;
        for (auto& [name, tensor] : tensors) result[py::str(name)] = tensor;
        if (return_metadata) return py::make_tuple(result, metadata);
        return std::move(result);
      },
      py::arg("path"), py::arg("return_metadata") = false,
      R"doc(Reads a .safetensors file, a sharded checkpoint's model.safetensors.index.json, or a
folder holding either.

Returns {name: torch.Tensor} in the file's order (and the ``__metadata__`` dict as a second value
with ``return_metadata=True``). The tensors are zero-copy views of the memory-mapped file where
the data is aligned for its dtype (copy-on-write: writing into one never reaches the file).
Raises alto.IoError for a missing or corrupt file.)doc");

  m.def(
      "save_safetensors",
      [](const std::string& path, const py::dict& tensors,
         const std::map<std::string, std::string>& metadata) {
        std::vector<std::pair<std::string, torch::Tensor>> list;
        for (auto item : tensors) {
          const std::string name = py::cast<std::string>(item.first);
          const TensorArg tensor = [&] {
            try {
              return py::cast<TensorArg>(item.second);
            } catch (const py::cast_error&) {
              throw InvalidArgument("save_safetensors: tensor '" + name +
                                    "' is not a torch.Tensor or numpy.ndarray");
            }
          }();
          list.emplace_back(name, tensor.tensor);
        }
        py::gil_scoped_release release;
        save_safetensors(path, list, metadata);
      },
      py::arg("path"), py::arg("tensors"),
      py::arg("metadata") = std::map<std::string, std::string>{},
      R"doc(Writes {name: tensor} (torch.Tensor or numpy.ndarray, any device) to ``path`` with
``metadata`` ({str: str}) as ``__metadata__``, in the Hugging Face layout, atomically (a temporary
file renamed into place). Errors name the path and the tensor.)doc");
}

}  // namespace alto::python
