#include "alto/tokenizers/audio_tokenizer.h"

#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"

namespace alto::tokenizers {

std::string AudioEncodeOptions::to_string() const {
  std::ostringstream s;
  s << "AudioEncodeOptions(bandwidth=" << bandwidth << ", num_quantizers=" << num_quantizers << ")";
  return s.str();
}

torch::Tensor AudioTokenizerStream::encode_step(const torch::Tensor& samples) {
  torch::NoGradGuard no_grad;
  const SingleThreadedTorch one_thread;  // a step's operators are too small to share
  return do_encode_step(samples);
}

torch::Tensor AudioTokenizerStream::decode_step(const torch::Tensor& codes) {
  torch::NoGradGuard no_grad;
  const SingleThreadedTorch one_thread;
  return do_decode_step(codes);
}

torch::Tensor AudioTokenizerStream::encode_flush() {
  torch::NoGradGuard no_grad;
  const SingleThreadedTorch one_thread;
  return do_encode_flush();
}

torch::Tensor AudioTokenizerStream::decode_flush() {
  torch::NoGradGuard no_grad;
  const SingleThreadedTorch one_thread;
  return do_decode_flush();
}

std::unique_ptr<AudioTokenizerStream> AudioTokenizer::stream(const AudioEncodeOptions&,
                                                             int64_t) const {
  throw Unsupported("the " + model_type() +
                    " codec does not stream (only causal codecs do: Mimi, causal EnCodec)");
}

const Registry<AudioTokenizerEntry>& audio_tokenizers() {
  return Registry<AudioTokenizerEntry>::instance();
}

std::shared_ptr<const AudioTokenizer> AudioTokenizer::from_pretrained(const std::string& dir,
                                                                      const LoadOptions& options) {
  const auto [config, model_type] =
      detail::JsonConfig::load_model_type(dir, "AudioTokenizer::from_pretrained");
  return audio_tokenizers().at(model_type, config.path()).from_pretrained(dir, options);
}

}  // namespace alto::tokenizers
