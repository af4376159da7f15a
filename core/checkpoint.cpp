#include "alto/core/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <limits>
#include <sstream>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"

namespace alto {

void LoadOptions::validate() const {
  ALTO_CHECK_AS(Unsupported,
                dtype == torch::kFloat32 || dtype == torch::kFloat16 || dtype == torch::kBFloat16,
                "LoadOptions.dtype must be float32, float16 or bfloat16, got ", dtype);
  ALTO_CHECK_AS(Unsupported, !(device.is_cpu() && dtype == torch::kFloat16),
                "LoadOptions.dtype float16 needs a CUDA device: libtorch's CPU kernels have no "
                "float16 matrix multiply (load with float32 — float16 checkpoints are converted — "
                "or bfloat16)");
  ALTO_CHECK_AS(Unsupported, !device.is_cuda() || torch::cuda::is_available(),
                "LoadOptions.device ", device.str(),
                " is not available: this libtorch has no CUDA or no GPU is visible");
  ALTO_CHECK_AS(Unsupported, device.is_cpu() || device.is_cuda(), "LoadOptions.device ",
                device.str(), " is not supported (cpu or cuda)");
  ALTO_CHECK_AS(Unsupported,
                linear_weights == LinearWeights::kComputeDtype ||
                    (device.is_cpu() && dtype == torch::kFloat32),
                "LoadOptions.linear_weights int8 runs on CPU with float32 activations, not on ",
                device.str(), " in ", dtype_name(dtype));
}

std::string LoadOptions::to_string() const {
  return "LoadOptions(device=" + device.str() + ", dtype=" + dtype_name(dtype) +
         (linear_weights == LinearWeights::kInt8 ? ", linear_weights=int8" : "") + ")";
}

std::string LoadOptions::precision() const {
  return linear_weights == LinearWeights::kInt8 ? "int8" : dtype_name(dtype);
}

void LoadOptions::require_compute_dtype_weights(const std::string& model) const {
  ALTO_CHECK_AS(Unsupported, linear_weights == LinearWeights::kComputeDtype, model,
                " keeps its weights in the compute dtype: int8 linear weights are for the text "
                "decoders of Whisper, the audio LMs, Kyutai and CSM (load with float32 or "
                "bfloat16)");
}

LoadOptions LoadOptions::parse(const std::string& device, const std::string& dtype) {
  LoadOptions o;
  o.device = parse_device(device);
  if (dtype == "int8") {
    o.linear_weights = LinearWeights::kInt8;
  } else {
    try {
      o.dtype = parse_dtype(dtype);
    } catch (const InvalidArgument&) {
      throw InvalidArgument("unknown dtype '" + dtype +
                            "' (expected float32, float16, bfloat16, or int8 for int8 linear "
                            "weights with float32 activations)");
    }
  }
  o.validate();
  return o;
}

void require_checkpoint_folder(const std::string& dir, const std::string& caller) {
  ALTO_CHECK_AS(IoError, std::filesystem::is_directory(dir), caller, ": ", dir,
                " is not a folder (expected a checkpoint folder with config.json and "
                "model.safetensors)");
}

torch::Device parse_device(const std::string& name) {
  try {
    return torch::Device(name);
  } catch (const std::exception&) {
    throw InvalidArgument("unknown device '" + name + "' (expected cpu, cuda or cuda:N)");
  }
}

torch::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return torch::kFloat32;
  if (name == "float16" || name == "fp16" || name == "half") return torch::kFloat16;
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  throw InvalidArgument("unknown dtype '" + name + "' (expected float32, float16 or bfloat16)");
}

std::string dtype_name(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32:
      return "float32";
    case torch::kFloat16:
      return "float16";
    case torch::kBFloat16:
      return "bfloat16";
    default:
      return c10::toString(dtype);
  }
}

namespace {

// The binder whose checkpoint bounds the weights declared on this thread.
thread_local CheckpointBinder* declaring_binder = nullptr;

}  // namespace

torch::Tensor declare_weight(torch::IntArrayRef shape, const torch::TensorOptions& options) {
  uint64_t elements = 1;
  for (const int64_t size : shape) {
    ALTO_CHECK(size >= 0, "a weight of shape ", shape, " has a negative size");
    ALTO_CHECK(!__builtin_mul_overflow(elements, static_cast<uint64_t>(size), &elements) &&
                   elements <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
               "a weight of shape ", shape, " has more elements than a tensor can hold");
  }
  CheckpointBinder* binder = declaring_binder;
  if (!binder) return torch::empty(shape, options);
  const uint64_t declared_elements = binder->declared_elements_ + elements;
  const uint64_t declared_tensors = binder->declared_tensors_ + 1;
  ALTO_CHECK(declared_elements <= 2 * binder->stored_elements_ + (1 << 16) &&
                 declared_tensors <= 2 * binder->stored_tensors_ + 16,
             binder->checkpoint_.path(), " does not fit ", binder->model_,
             ": the config declares more weights than the checkpoint holds (", declared_tensors,
             " tensors of ", declared_elements, " elements so far, the last of shape ", shape,
             "; the checkpoint has ", binder->stored_tensors_, " of ", binder->stored_elements_,
             "): a layer count or size in config.json disagrees with the checkpoint");
  binder->declared_elements_ = declared_elements;
  binder->declared_tensors_ = declared_tensors;
  // One element seen through zero strides: the declared shape without its memory.
  torch::Tensor placeholder =
      torch::empty_strided(shape, std::vector<int64_t>(shape.size(), 0), options);
  binder->unbound_.insert(placeholder.unsafeGetTensorImpl());
  return placeholder;
}

CheckpointBinder::CheckpointBinder(const SafetensorsCheckpoint& checkpoint,
                                   const LoadOptions& options, std::string model)
    : checkpoint_(checkpoint), options_(options), model_(std::move(model)) {
  options_.validate();
  for (const auto& name : checkpoint_.names()) {
    uint64_t elements = 1;
    for (const int64_t size : checkpoint_.info(name).shape) elements *= size;  // bounded by bytes
    stored_elements_ += elements;
    stored_tensors_ += 1;
  }
  outer_ = declaring_binder;
  declaring_binder = this;
}

CheckpointBinder::~CheckpointBinder() {
  if (declaring_binder == this) declaring_binder = outer_;
}

bool CheckpointBinder::contains(const std::string& name) const {
  return checkpoint_.contains(name);
}

torch::Tensor CheckpointBinder::convert(const torch::Tensor& stored,
                                        torch::ScalarType dtype) const {
  // A float32 CPU load keeps the memory-mapped view: no copy, no extra resident memory.
  if (!stored.is_floating_point()) return stored.to(options_.device);
  if (!options_.device.is_cpu() || stored.scalar_type() == dtype)
    return stored.to(options_.device, dtype);
  torch::Tensor converted = empty_on_huge_pages(stored.sizes(), stored.options().dtype(dtype));
  converted.copy_(stored);
  return converted;
}

torch::Tensor CheckpointBinder::fetch(const std::string& name, torch::ScalarType dtype) {
  // A tied weight fetched twice shares one converted tensor.
  auto [it, inserted] = fetched_.try_emplace({name, dtype});
  if (inserted) it->second = fetch_uncached(name, dtype);
  return it->second;
}

namespace {

// torch.nn.utils.weight_norm stores weight_g/weight_v; the parametrize API stores
// parametrizations.weight.original0 (g) and original1 (v). Both mean w = g * v / ||v||.
std::vector<std::pair<std::string, std::string>> weight_norm_names(const std::string& name) {
  const std::string suffix = "weight";
  if (name.size() < suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix))
    return {};
  const std::string stem = name.substr(0, name.size() - suffix.size());
  return {{name + "_g", name + "_v"},
          {stem + "parametrizations.weight.original0", stem + "parametrizations.weight.original1"}};
}

}  // namespace

std::optional<std::vector<int64_t>> CheckpointBinder::stored_shape(const std::string& name) {
  if (checkpoint_.contains(name)) {
    used_.insert(name);
    return checkpoint_.info(name).shape;
  }
  for (const auto& [g_name, v_name] : weight_norm_names(name)) {
    if (!checkpoint_.contains(g_name) || !checkpoint_.contains(v_name)) continue;
    used_.insert(g_name);
    used_.insert(v_name);
    return checkpoint_.info(v_name).shape;
  }
  return std::nullopt;
}

torch::Tensor CheckpointBinder::fetch_uncached(const std::string& name,
                                               torch::ScalarType dtype) const {
  if (checkpoint_.contains(name)) return convert(checkpoint_.tensor(name), dtype);
  for (const auto& [g_name, v_name] : weight_norm_names(name)) {
    if (!checkpoint_.contains(g_name) || !checkpoint_.contains(v_name)) continue;
    torch::Tensor g = checkpoint_.tensor(g_name).to(torch::kFloat32);
    torch::Tensor v = checkpoint_.tensor(v_name).to(torch::kFloat32);
    // The norm runs over every dimension but the one g keeps (dim 0 for Conv1d, also for
    // ConvTranspose1d whose dim 0 is in_channels); a scalar g means the whole tensor.
    int64_t dim = -1;
    for (int64_t d = 0; d < g.dim(); ++d)
      if (g.size(d) != 1) dim = d;
    ALTO_CHECK(g.dim() == v.dim() || g.numel() == 1, checkpoint_.path(), ": weight norm ", g_name,
               " has shape ", g.sizes(), ", which does not match ", v_name, " ", v.sizes());
    return convert(at::_weight_norm(v, g, dim), dtype);
  }
  // bind() resolved every pending name against the header.
  throw Error(detail::concat(checkpoint_.path(), ": ", name, " is not in the checkpoint"));
}

void CheckpointBinder::bind(torch::nn::Module& module, const std::string& prefix) {
  for (auto& item : module.named_parameters(/*recurse=*/true))
    bind(item.value(), prefix + item.key());
  for (auto& item : module.named_buffers(/*recurse=*/true)) bind(item.value(), prefix + item.key());
}

void CheckpointBinder::bind(torch::Tensor& target, const std::string& name,
                            const std::string& tied) {
  unbound_.erase(target.unsafeGetTensorImpl());
  std::string source = name;
  std::optional<std::vector<int64_t>> shape = stored_shape(name);
  if (!shape && !tied.empty()) {
    source = tied;
    shape = stored_shape(tied);
  }
  if (!shape) {
    missing_.push_back(detail::concat(name, " (expected ", target.sizes(), ")"));
    return;
  }
  if (target.sizes() != c10::IntArrayRef(*shape)) {
    misshaped_.push_back(
        detail::concat(name, ": expected ", target.sizes(), ", found ", c10::IntArrayRef(*shape)));
    return;
  }
  pending_.push_back({target, source, options_.dtype});
}

void CheckpointBinder::finish(const std::string& owned_prefix) {
  std::vector<std::string> unexpected;
  for (const auto& name : checkpoint_.names())
    if (!used_.count(name) && name.compare(0, owned_prefix.size(), owned_prefix) == 0)
      unexpected.push_back(
          detail::concat(name, " ", c10::IntArrayRef(checkpoint_.info(name).shape)));
  if (!missing_.empty() || !unexpected.empty() || !misshaped_.empty()) {
    std::ostringstream message;
    message << checkpoint_.path() << " does not fit " << model_ << ": " << missing_.size()
            << " missing, " << unexpected.size() << " unexpected, " << misshaped_.size()
            << " mis-shaped tensor(s)";
    for (const auto& m : missing_) message << "\n  missing: " << m;
    for (const auto& u : unexpected) message << "\n  unexpected: " << u;
    for (const auto& m : misshaped_) message << "\n  mis-shaped: " << m;
    throw InvalidArgument(message.str());
  }
  // A model that declared a weight it never bound would compute with a placeholder.
  ALTO_CHECK_AS(Error, unbound_.empty(), model_, ": ", unbound_.size(),
                " declared weight(s) were never bound to a checkpoint tensor");
  {
    torch::NoGradGuard no_grad;
    for (Pending& p : pending_) p.target.set_data(fetch(p.source, p.dtype));
  }
  pending_.clear();
  fetched_.clear();
  for (auto& prepare : prepare_) prepare();
  prepare_.clear();
}

}  // namespace alto
