#include "alto/core/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <sstream>

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
}

std::string LoadOptions::to_string() const {
  return "LoadOptions(device=" + device.str() + ", dtype=" + dtype_name(dtype) + ")";
}

LoadOptions LoadOptions::parse(const std::string& device, const std::string& dtype) {
  LoadOptions o;
  o.device = parse_device(device);
  o.dtype = parse_dtype(dtype);
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

CheckpointBinder::CheckpointBinder(const SafetensorsCheckpoint& checkpoint,
                                   const LoadOptions& options, std::string model)
    : checkpoint_(checkpoint), options_(options), model_(std::move(model)) {
  options_.validate();
}

bool CheckpointBinder::contains(const std::string& name) const {
  return checkpoint_.contains(name);
}

torch::Tensor CheckpointBinder::convert(const torch::Tensor& stored) const {
  // A float32 CPU load keeps the memory-mapped view: no copy, no extra resident memory.
  if (!stored.is_floating_point()) return stored.to(options_.device);
  return stored.to(options_.device, options_.dtype);
}

torch::Tensor CheckpointBinder::fetch(const std::string& name) {
  // A tied weight fetched twice shares one converted tensor.
  if (auto it = fetched_.find(name); it != fetched_.end()) return it->second;
  torch::Tensor found = fetch_uncached(name);
  if (found.defined()) fetched_[name] = found;
  return found;
}

torch::Tensor CheckpointBinder::fetch_uncached(const std::string& name) {
  if (checkpoint_.contains(name)) {
    used_.insert(name);
    return convert(checkpoint_.tensor(name));
  }
  const std::string suffix = "weight";
  if (name.size() < suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix))
    return {};
  const std::string stem = name.substr(0, name.size() - suffix.size());
  // torch.nn.utils.weight_norm stores weight_g/weight_v; the parametrize API stores
  // parametrizations.weight.original0 (g) and original1 (v). Both mean w = g * v / ||v||.
  for (const auto& [g_name, v_name] : {std::pair{name + "_g", name + "_v"},
                                       std::pair{stem + "parametrizations.weight.original0",
                                                 stem + "parametrizations.weight.original1"}}) {
    if (!checkpoint_.contains(g_name) || !checkpoint_.contains(v_name)) continue;
    used_.insert(g_name);
    used_.insert(v_name);
    torch::Tensor g = checkpoint_.tensor(g_name).to(torch::kFloat32);
    torch::Tensor v = checkpoint_.tensor(v_name).to(torch::kFloat32);
    // The norm runs over every dimension but the one g keeps (dim 0 for Conv1d, also for
    // ConvTranspose1d whose dim 0 is in_channels); a scalar g means the whole tensor.
    int64_t dim = -1;
    for (int64_t d = 0; d < g.dim(); ++d)
      if (g.size(d) != 1) dim = d;
    ALTO_CHECK(g.dim() == v.dim() || g.numel() == 1, checkpoint_.path(), ": weight norm ", g_name,
               " has shape ", g.sizes(), ", which does not match ", v_name, " ", v.sizes());
    return convert(at::_weight_norm(v, g, dim));
  }
  return {};
}

void CheckpointBinder::bind(torch::nn::Module& module, const std::string& prefix) {
  for (auto& item : module.named_parameters(/*recurse=*/true))
    bind(item.value(), prefix + item.key());
  for (auto& item : module.named_buffers(/*recurse=*/true)) bind(item.value(), prefix + item.key());
}

void CheckpointBinder::bind(torch::Tensor& target, const std::string& name,
                            const std::string& tied) {
  torch::Tensor found = fetch(name);
  if (!found.defined() && !tied.empty()) found = fetch(tied);
  if (!found.defined()) {
    missing_.push_back(detail::concat(name, " (expected ", target.sizes(), ")"));
    return;
  }
  if (found.sizes() != target.sizes()) {
    misshaped_.push_back(
        detail::concat(name, ": expected ", target.sizes(), ", found ", found.sizes()));
    return;
  }
  torch::NoGradGuard no_grad;
  target.set_data(found);
}

void CheckpointBinder::finish(const std::string& owned_prefix) const {
  std::vector<std::string> unexpected;
  for (const auto& name : checkpoint_.names())
    if (!used_.count(name) && name.compare(0, owned_prefix.size(), owned_prefix) == 0)
      unexpected.push_back(
          detail::concat(name, " ", c10::IntArrayRef(checkpoint_.info(name).shape)));
  if (missing_.empty() && unexpected.empty() && misshaped_.empty()) return;
  std::ostringstream message;
  message << checkpoint_.path() << " does not fit " << model_ << ": " << missing_.size()
          << " missing, " << unexpected.size() << " unexpected, " << misshaped_.size()
          << " mis-shaped tensor(s)";
  for (const auto& m : missing_) message << "\n  missing: " << m;
  for (const auto& u : unexpected) message << "\n  unexpected: " << u;
  for (const auto& m : misshaped_) message << "\n  mis-shaped: " << m;
  throw InvalidArgument(message.str());
}

}  // namespace alto
