#pragma once
// The golden feature cases (tests/data/features, copied from ../shared/golden/features): tensors,
// metadata and the tolerance each case states.

#include <torch/types.h>

#include <optional>
#include <string>

#include "alto/core/safetensors.h"

namespace alto::test {

class GoldenCase {
 public:
  explicit GoldenCase(const std::string& case_name);  // features/<case_name>.safetensors
  torch::Tensor tensor(const std::string& name) const;
  std::string meta(const std::string& key) const;
  double meta_number(const std::string& key) const;
  std::string wav_path() const;
  /// REQUIREs `actual` within the case's atol/rtol (and mean_abs_tol where stated) of `name`.
  void require_matches(const torch::Tensor& actual, const std::string& name = "expected") const;

 private:
  std::string name_;
  SafetensorsFile file_;
};

/// REQUIREs |actual - expected| <= atol + rtol |expected| everywhere, and a mean absolute error
/// within mean_abs_tol when given; on failure reports the worst element.
void require_close(const torch::Tensor& actual, const torch::Tensor& expected, double atol,
                   double rtol, std::optional<double> mean_abs_tol, const std::string& what);

}  // namespace alto::test
