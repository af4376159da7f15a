#include "alto/tokenizers/audio_tokenizer.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"

namespace alto::tokenizers {

std::string AudioEncodeOptions::to_string() const {
  std::ostringstream s;
  s << "AudioEncodeOptions(bandwidth=" << bandwidth << ", num_quantizers=" << num_quantizers << ")";
  return s.str();
}

torch::Tensor AudioTokenizerStream::encode_step(const torch::Tensor& samples) {
  torch::NoGradGuard no_grad;
  const TorchThreads one_thread(1);  // a step's operators are too small to share
  return do_encode_step(samples);
}

torch::Tensor AudioTokenizerStream::decode_step(const torch::Tensor& codes) {
  torch::NoGradGuard no_grad;
  const TorchThreads one_thread(1);
  return do_decode_step(codes);
}

torch::Tensor AudioTokenizerStream::encode_flush() {
  torch::NoGradGuard no_grad;
  const TorchThreads one_thread(1);
  return do_encode_flush();
}

torch::Tensor AudioTokenizerStream::decode_flush() {
  torch::NoGradGuard no_grad;
  const TorchThreads one_thread(1);
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

void save_codes(const std::string& path, const AudioCodes& codes, const AudioTokenizer& codec,
                const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"codes", codes.codes.to(torch::kCPU, torch::kInt64).contiguous()}};
  if (codes.scales.defined())
    tensors.emplace_back("scales", codes.scales.to(torch::kCPU, torch::kFloat32).contiguous());
  std::map<std::string, std::string> all = {{"model_type", codec.model_type()},
                                            {"sample_rate", std::to_string(codec.sample_rate())},
                                            {"frame_rate", std::to_string(codec.frame_rate())},
                                            {"channels", std::to_string(codec.channels())},
                                            {"num_codebooks", std::to_string(codes.codes.size(-2))},
                                            {"num_samples", std::to_string(codes.num_samples)}};
  all.insert(metadata.begin(), metadata.end());
  save_safetensors(path, tensors, all);
}

AudioCodes load_codes(const std::string& path, const AudioTokenizer& codec) {
  const SafetensorsFile file(path);
  const auto& metadata = file.metadata();
  // Codes are indices into one model's codebooks: another codec's decode them into noise.
  if (auto it = metadata.find("model_type"); it != metadata.end())
    ALTO_CHECK(it->second == codec.model_type(), path, " holds codes of a ", it->second,
               " model; this model is ", codec.model_type(),
               " (decode with the model that encoded them)");
  if (auto it = metadata.find("sample_rate"); it != metadata.end())
    ALTO_CHECK(it->second == std::to_string(codec.sample_rate()), path, " holds codes of a ",
               it->second, " Hz model; this model runs at ", codec.sample_rate(),
               " Hz (decode with the model that encoded them)");
  ALTO_CHECK(file.contains("codes"), path, ": no tensor 'codes' (write it with alto encode)");
  AudioCodes codes;
  codes.codes = file.tensor("codes");
  ALTO_CHECK(codes.codes.scalar_type() == torch::kInt64, path,
             ": tensor 'codes' must be int64, got ", codes.codes.scalar_type());
  if (file.contains("scales")) {
    codes.scales = file.tensor("scales");
    ALTO_CHECK(codes.scales.is_floating_point(), path,
               ": tensor 'scales' must be floating point, got ", codes.scales.scalar_type());
    codes.scales = codes.scales.to(torch::kFloat32);
  }
  if (auto it = metadata.find("num_samples"); it != metadata.end()) {
    const std::string& text = it->second;
    size_t used = 0;
    try {
      codes.num_samples = std::stoll(text, &used);
    } catch (const std::exception&) {  // not a number: nothing used
    }
    ALTO_CHECK(used == text.size() && !text.empty() && codes.num_samples >= 0, path,
               ": metadata num_samples '", text, "' is not a sample count");
  }
  return codes;
}

}  // namespace alto::tokenizers
