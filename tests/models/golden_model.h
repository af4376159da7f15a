#pragma once
// A golden model folder (tests/data/models/<name>, copied from ../shared/golden/models): the
// checkpoint as the Hub ships it, and io.safetensors with the reference's inputs, outputs and,
// in its metadata, the tolerance of every tensor.

#include <torch/types.h>

#include <string>

#include "alto/core/safetensors.h"

namespace alto::test {

class GoldenModel {
 public:
  explicit GoldenModel(const std::string& name);

  const std::string& dir() const { return dir_; }
  /// A tensor of io.safetensors.
  torch::Tensor tensor(const std::string& name) const;
  /// A tensor of the checkpoint (model.safetensors).
  torch::Tensor checkpoint_tensor(const std::string& name) const;
  /// The recommended absolute tolerance io.safetensors' metadata states for `name`.
  double tolerance(const std::string& name) const;
  /// A value of io.safetensors' metadata (REQUIREd present).
  std::string metadata(const std::string& key) const;
  /// REQUIREs `actual` within tolerance(name) of tensor(name) (exact for integer tensors).
  void require_matches(const torch::Tensor& actual, const std::string& name) const;
  /// A scratch copy of the folder (its files linked) whose config.json has `field` set to
  /// `json_value` (JSON text: "1000000", "\"gelu\""), as a hostile or careless edit leaves it.
  std::string with_config(const std::string& field, const std::string& json_value) const;

 private:
  std::string dir_;
  SafetensorsFile io_;
  SafetensorsFile checkpoint_;
};

/// ||actual - expected|| / ||expected||, both taken as float32: how far a reduced-precision run
/// lies from the float32 reference.
double relative_distance(const torch::Tensor& actual, const torch::Tensor& expected);
/// The fraction of equal codes along the last (time) axis: [..., codebooks] for codes [...,
/// codebooks, frames]. REQUIREs equal shapes.
torch::Tensor code_agreement(const torch::Tensor& actual, const torch::Tensor& expected);

}  // namespace alto::test
