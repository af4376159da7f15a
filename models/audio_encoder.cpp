#include "alto/models/audio_encoder.h"

#include <filesystem>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"

namespace alto::models {

const Registry<AudioEncoderEntry>& audio_encoders() {
  return Registry<AudioEncoderEntry>::instance();
}

std::shared_ptr<const AudioEncoder> AudioEncoder::from_pretrained(const std::string& dir,
                                                                  const LoadOptions& options) {
  namespace fs = std::filesystem;
  require_checkpoint_folder(dir, "AudioEncoder::from_pretrained");
  const detail::JsonConfig config =
      detail::JsonConfig::load((fs::path(dir) / "config.json").string());
  config.require("model_type");
  std::string model_type;
  config.read("model_type", model_type);
  return audio_encoders().at(model_type, config.path()).from_pretrained(dir, options);
}

}  // namespace alto::models
