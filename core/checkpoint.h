#pragma once
// Loading Hugging Face checkpoints into libtorch modules by the checkpoint's own tensor names.
// Models register their parameters under those names (STYLE.md §6), so one binder serves every
// architecture: it converts each tensor to the load options' device and dtype, folds weight norm
// from either of PyTorch's spellings, follows tied weights, and reports every missing,
// unexpected and mis-shaped tensor in one error.

#include <torch/nn/module.h>
#include <torch/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "alto/core/safetensors.h"

namespace alto {

/// Where and in which precision a model runs. Checkpoint tensors are converted on load.
struct LoadOptions {
  torch::Device device = torch::kCPU;
  /// Compute dtype of the floating-point weights and activations: float32, or float16 /
  /// bfloat16 where the device computes in it (libtorch's CPU kernels have no float16 GEMM).
  torch::ScalarType dtype = torch::kFloat32;

  /// From the spellings the CLI and Python take ("cpu", "cuda:1"; "float32", "bf16", ...),
  /// validated.
  static LoadOptions parse(const std::string& device, const std::string& dtype);
  /// Throws alto::Unsupported for a dtype or device this libtorch cannot run.
  void validate() const;
  std::string to_string() const;
};

/// Throws alto::IoError naming `caller` unless `dir` is a folder (a Hub checkpoint folder:
/// config.json and model.safetensors or its index).
void require_checkpoint_folder(const std::string& dir, const std::string& caller);

/// "cpu", "cuda", "cuda:1" (as torch.device spells them); errors name the value.
torch::Device parse_device(const std::string& name);
/// "float32", "float16", "bfloat16" (also "fp32", "fp16", "bf16").
torch::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(torch::ScalarType dtype);

/// Fills a model's parameters from a checkpoint, collecting every mismatch; finish() reports.
class CheckpointBinder {
 public:
  /// `model` names the architecture in error messages.
  CheckpointBinder(const SafetensorsCheckpoint& checkpoint, const LoadOptions& options,
                   std::string model);

  /// Every parameter and buffer of `module`, each from the tensor `prefix` + its dotted name.
  void bind(torch::nn::Module& module, const std::string& prefix = "");
  /// One tensor: `target`'s shape is the expectation; its storage is replaced. When the
  /// checkpoint lacks `name` and `tied` is given, the tensor `tied` is used instead (a Hub
  /// checkpoint leaves tied weights out).
  void bind(torch::Tensor& target, const std::string& name, const std::string& tied = "");
  /// Tensors bound from now on are converted to `dtype` (a float32 codec inside a bfloat16
  /// model, as transformers keeps it).
  void set_dtype(torch::ScalarType dtype) { options_.dtype = dtype; }
  /// Whether the checkpoint holds `name` (for optional tensors and naming variants).
  bool contains(const std::string& name) const;

  /// Throws alto::InvalidArgument listing every missing, unexpected and mis-shaped tensor with
  /// the expected and found shapes; returns when the checkpoint fits the model exactly.
  /// With `owned_prefix`, only tensors under that prefix count as unexpected (a module loaded
  /// alone from a larger checkpoint, such as an audio LM's encoder).
  void finish(const std::string& owned_prefix = "") const;

 private:
  /// The checkpoint's tensor for `name` converted for computing, folding weight norm
  /// (`name`_g/_v, or parametrizations.weight.original0/1) when `name` ends in "weight".
  /// Undefined when absent.
  torch::Tensor fetch(const std::string& name);
  torch::Tensor fetch_uncached(const std::string& name);
  torch::Tensor convert(const torch::Tensor& stored) const;

  const SafetensorsCheckpoint& checkpoint_;
  LoadOptions options_;
  std::string model_;
  std::map<std::string, torch::Tensor> fetched_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;
  std::vector<std::string> misshaped_;
};

}  // namespace alto
