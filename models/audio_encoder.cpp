#include "alto/models/audio_encoder.h"

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"

namespace alto::models {

const Registry<AudioEncoderEntry>& audio_encoders() {
  return Registry<AudioEncoderEntry>::instance();
}

std::shared_ptr<const AudioEncoder> AudioEncoder::from_pretrained(const std::string& dir,
                                                                  const LoadOptions& options) {
  const auto [config, model_type] =
      detail::JsonConfig::load_model_type(dir, "AudioEncoder::from_pretrained");
  return audio_encoders().at(model_type, config.path()).from_pretrained(dir, options);
}

}  // namespace alto::models
