#include "alto/models/whisper/config.h"

#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/options.h"
#include "alto/models/blocks/basic.h"

namespace alto::models {

const OptionSchema<WhisperConfig>& WhisperConfig::schema() {
  using C = WhisperConfig;
  static const auto schema =
      OptionSchema<C>("WhisperConfig")
          .positive("vocab_size", &C::vocab_size, "Vocabulary size")
          .positive("num_mel_bins", &C::num_mel_bins, "Mel bins of the input")
          .positive("d_model", &C::d_model, "Width")
          .positive("encoder_layers", &C::encoder_layers, "Encoder layers")
          .positive("encoder_attention_heads", &C::encoder_attention_heads, "Encoder heads")
          .positive("encoder_ffn_dim", &C::encoder_ffn_dim, "Encoder MLP width")
          .positive("decoder_layers", &C::decoder_layers, "Decoder layers")
          .positive("decoder_attention_heads", &C::decoder_attention_heads, "Decoder heads")
          .positive("decoder_ffn_dim", &C::decoder_ffn_dim, "Decoder MLP width")
          .positive("max_source_positions", &C::max_source_positions, "Encoder positions")
          .positive("max_target_positions", &C::max_target_positions, "Decoder positions")
          .field("activation_function", &C::activation_function, "MLP activation")
          .field("scale_embedding", &C::scale_embedding, "Scale embeddings by sqrt(d_model)")
          .field("tie_word_embeddings", &C::tie_word_embeddings, "Head tied to the embedding")
          .field("pad_token_id", &C::pad_token_id, "Padding token")
          .field("bos_token_id", &C::bos_token_id, "Begin-of-sequence token")
          .field("eos_token_id", &C::eos_token_id, "End-of-sequence token")
          .field("decoder_start_token_id", &C::decoder_start_token_id, "First decoder token");
  return schema;
}

WhisperConfig WhisperConfig::from_json(const std::string& path, const std::string& sub_config) {
  const detail::JsonConfig json =
      sub_config.empty()
          ? detail::JsonConfig::load_model_config(path, "whisper", "a Whisper")
          : detail::JsonConfig::load_model_config(path, "", "").sub(sub_config.c_str());
  WhisperConfig c = json.read(schema());
  // VoxtralEncoderConfig's attribute_map spells the encoder's keys the Llama way.
  std::string model_type;
  json.read("model_type", model_type);
  if (model_type == "voxtral_encoder") {
    json.read("hidden_size", c.d_model);
    json.read("num_hidden_layers", c.encoder_layers);
    json.read("num_attention_heads", c.encoder_attention_heads);
    json.read("intermediate_size", c.encoder_ffn_dim);
  }
  // An audio LM's audio_config describes the encoder alone: no decoder to check.
  if (!sub_config.empty()) c.decoder_attention_heads = c.encoder_attention_heads;
  return json.validated(c);
}

void WhisperConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(d_model % encoder_attention_heads == 0, "WhisperConfig.d_model (", d_model,
             ") must be a multiple of encoder_attention_heads (", encoder_attention_heads, ")");
  ALTO_CHECK(d_model % decoder_attention_heads == 0, "WhisperConfig.d_model (", d_model,
             ") must be a multiple of decoder_attention_heads (", decoder_attention_heads, ")");
  blocks::parse_activation(activation_function, "WhisperConfig.activation_function");
}

std::string WhisperConfig::to_string() const {
  std::ostringstream s;
  s << "WhisperConfig(d_model=" << d_model << ", encoder_layers=" << encoder_layers
    << ", decoder_layers=" << decoder_layers << ", heads=" << encoder_attention_heads << "/"
    << decoder_attention_heads << ", ffn=" << encoder_ffn_dim << "/" << decoder_ffn_dim
    << ", num_mel_bins=" << num_mel_bins << ", vocab_size=" << vocab_size
    << ", activation=" << activation_function << ")";
  return s.str();
}

}  // namespace alto::models
