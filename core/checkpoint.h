#pragma once
// Loading Hugging Face checkpoints into libtorch modules by the checkpoint's own tensor names.
// Models register their parameters under those names (STYLE.md §6), so one binder serves every
// architecture: it converts each tensor to the load options' device and dtype, folds weight norm
// from either of PyTorch's spellings, follows tied weights, and reports every missing,
// unexpected and mis-shaped tensor in one error.
//
// A config.json is untrusted: its sizes are checked against the checkpoint's header before any
// weight memory exists. While a binder is alive, models declare their weights (declare_weight)
// as placeholders without memory, at most as many as the checkpoint could fill; binding compares
// shapes with the header alone, and finish() allocates (or maps) only once everything fits.

#include <torch/nn/module.h>
#include <torch/types.h>

#include <functional>
#include <map>
#include <optional>
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
  /// How the linear layers of the models that quantize (the text decoders, Whisper's among
  /// them) store their weights: in the compute dtype, or as int8 with one float32 scale per
  /// output channel (symmetric, round to nearest), multiplied with float32 activations — a
  /// quarter of float32's bytes per decoding step. int8 needs float32 activations on CPU.
  enum class LinearWeights { kComputeDtype, kInt8 };
  LinearWeights linear_weights = LinearWeights::kComputeDtype;

  /// From the spellings the CLI and Python take ("cpu", "cuda:1"; "float32", "bf16", ...;
  /// "int8": float32 activations with int8 linear weights), validated.
  static LoadOptions parse(const std::string& device, const std::string& dtype);
  /// Throws alto::Unsupported for a dtype or device this libtorch cannot run.
  void validate() const;
  std::string to_string() const;
  /// The precision as `parse` spells it: "float32", "bfloat16", "int8".
  std::string precision() const;
  /// Throws alto::Unsupported naming `model` for int8 linear weights: for the models whose
  /// weights all stay in the compute dtype (encoders and codecs, where a step is not bound by
  /// reading weights).
  void require_compute_dtype_weights(const std::string& model) const;
};

/// Throws alto::IoError naming `caller` unless `dir` is a folder (a Hub checkpoint folder:
/// config.json and model.safetensors or its index).
void require_checkpoint_folder(const std::string& dir, const std::string& caller);

/// "cpu", "cuda", "cuda:1" (as torch.device spells them); errors name the value.
torch::Device parse_device(const std::string& name);
/// "float32", "float16", "bfloat16" (also "fp32", "fp16", "bf16").
torch::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(torch::ScalarType dtype);

/// A weight (parameter or buffer) a model declares with the shape its config implies. While a
/// CheckpointBinder is alive on this thread it is a placeholder holding one element (reads see
/// that element everywhere; in-place writes are refused) until the binder's finish() fills it,
/// and the weights declared in all may not outgrow what that binder's checkpoint holds; without
/// a binder it is uninitialised memory of that shape (a module built for tests). Throws
/// alto::InvalidArgument for negative or overflowing sizes and past the checkpoint's bound.
torch::Tensor declare_weight(torch::IntArrayRef shape, const torch::TensorOptions& options);

/// Fills a model's parameters from a checkpoint, collecting every mismatch; finish() reports,
/// and only then fills them.
class CheckpointBinder {
 public:
  /// `model` names the architecture in error messages. Weights declared from now on (on this
  /// thread, until the binder is destroyed) are bounded by the checkpoint's size.
  CheckpointBinder(const SafetensorsCheckpoint& checkpoint, const LoadOptions& options,
                   std::string model);
  ~CheckpointBinder();
  CheckpointBinder(const CheckpointBinder&) = delete;
  CheckpointBinder& operator=(const CheckpointBinder&) = delete;

  /// Every parameter and buffer of `module`, each from the tensor `prefix` + its dotted name.
  void bind(torch::nn::Module& module, const std::string& prefix = "");
  /// One tensor: `target`'s shape is the expectation, checked against the header now; finish()
  /// replaces its storage. When the checkpoint lacks `name` and `tied` is given, the tensor
  /// `tied` is used instead (a Hub checkpoint leaves tied weights out).
  void bind(torch::Tensor& target, const std::string& name, const std::string& tied = "");
  /// Runs `prepare` at the end of finish(), once every bound tensor holds its values (fusing
  /// projections, normalising codebooks), in the order given.
  void then(std::function<void()> prepare) { prepare_.push_back(std::move(prepare)); }
  /// Tensors bound from now on are converted to `dtype` (a float32 codec inside a bfloat16
  /// model, as transformers keeps it).
  void set_dtype(torch::ScalarType dtype) { options_.dtype = dtype; }
  /// Whether the checkpoint holds `name` (for optional tensors and naming variants).
  bool contains(const std::string& name) const;

  /// Throws alto::InvalidArgument listing every missing, unexpected and mis-shaped tensor with
  /// the expected and found shapes, before any weight memory is allocated; when the checkpoint
  /// fits the model exactly, fills every bound tensor and runs then()'s preparations.
  /// With `owned_prefix`, only tensors under that prefix count as unexpected (a module loaded
  /// alone from a larger checkpoint, such as an audio LM's encoder).
  void finish(const std::string& owned_prefix = "");

 private:
  friend torch::Tensor declare_weight(torch::IntArrayRef, const torch::TensorOptions&);
  struct Pending {
    torch::Tensor target;
    std::string source;  // the checkpoint name (or tied name) it is filled from
    torch::ScalarType dtype;
  };

  /// The shape `name` has in the checkpoint (folding weight norm's g/v pair into the weight's),
  /// marking what it reads as used; nullopt when absent.
  std::optional<std::vector<int64_t>> stored_shape(const std::string& name);
  /// The checkpoint's tensor for `name` (as bind() resolved it) converted for computing,
  /// folding weight norm (`name`_g/_v, or parametrizations.weight.original0/1).
  torch::Tensor fetch(const std::string& name, torch::ScalarType dtype);
  torch::Tensor fetch_uncached(const std::string& name, torch::ScalarType dtype) const;
  torch::Tensor convert(const torch::Tensor& stored, torch::ScalarType dtype) const;

  const SafetensorsCheckpoint& checkpoint_;
  LoadOptions options_;
  std::string model_;
  std::map<std::pair<std::string, torch::ScalarType>, torch::Tensor> fetched_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;
  std::vector<std::string> misshaped_;
  std::vector<Pending> pending_;
  std::vector<std::function<void()>> prepare_;
  // The declaration bound: weights declared under this binder, against twice what the
  // checkpoint holds (a tied weight is declared twice but stored once).
  uint64_t stored_elements_ = 0, stored_tensors_ = 0;
  uint64_t declared_elements_ = 0, declared_tensors_ = 0;
  std::set<const void*> unbound_;  // placeholders declared but not bound yet
  CheckpointBinder* outer_ = nullptr;
};

}  // namespace alto
