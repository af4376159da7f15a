#pragma once
// Sesame's Conversational Speech Model (transformers' CsmForConditionalGeneration, sesame/csm-1b):
// a text backbone that writes Mimi codes. The prompt is speaker-tagged text turns, context turns
// carrying their audio as codes; each audio position of the prompt embeds the sum over codebooks
// of one table at code + k * vocab_size. Each generated frame: the backbone (a Llama with GQA
// and llama3 RoPE) predicts codebook 0 from its last hidden state; the depth decoder (a small
// Llama whose inputs are projected from the backbone's width) starts from that hidden state and
// codebook 0 and predicts codebooks 1 .. K-1 one after another, each with its own head; the
// frame's summed embedding is the backbone's next input. Mimi's decoder stream turns each frame
// into 80 ms of audio as soon as it exists.
//
// Ending as transformers' generate: it stops after the first frame whose codebooks 0 .. K-2 all
// equal codebook_eos_token_id (that frame is kept in the codes), and the audio is the decode of
// the codes before the first all-eos frame.

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/models/audio_language_model.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/generation.h"
#include "alto/models/mimi.h"
#include "alto/models/text_decoder.h"
#include "alto/tokenizers/text_tokenizer.h"

namespace alto::models {

/// config.json of a transformers-format CSM folder: the backbone's Llama keys at the top level,
/// depth_decoder_config and codec_config nested; absent keys take transformers' CsmConfig
/// defaults (sesame/csm-1b's).
struct CsmConfig {
  TextDecoderConfig backbone;       // hidden_size, num_hidden_layers, ..., rope_parameters
  TextDecoderConfig depth_decoder;  // depth_decoder_config's Llama keys
  int64_t num_codebooks = 32;
  int64_t vocab_size = 2051;  // per codebook: the codec's codes, then eos / pad ids
  int64_t text_vocab_size = 128256;
  int64_t backbone_hidden_size = 2048;  // depth_decoder_config's: the width of its inputs
  int64_t bos_token_id = 128000;
  int64_t audio_token_id = 128002;      // <|AUDIO|>, one per context frame
  int64_t audio_eos_token_id = 128003;  // <|audio_eos|>, embedded as an all-eos frame
  int64_t codebook_eos_token_id = 0;
  int64_t codebook_pad_token_id = 2050;
  bool tie_codebooks_embeddings = true;
  MimiConfig codec_config;

  /// `path`: config.json or its folder. alto::Unsupported for another model_type,
  /// alto::InvalidArgument naming the file and key otherwise (a codec with fewer codebooks
  /// than the model, or a depth decoder fed another width, included).
  static CsmConfig from_json(const std::string& path);
  static const OptionSchema<CsmConfig>& schema();
  void validate() const;
  std::string to_string() const;
};

/// generation_config.json: its keys drive the backbone (codebook 0), its depth_decoder_* keys
/// the depth decoder (codebooks 1 .. K-1), each from transformers' defaults. max_new_tokens
/// counts frames.
struct CsmGenerationConfig {
  GenerationConfig backbone;
  GenerationConfig depth_decoder;

  /// A folder without generation_config.json gives the defaults (greedy).
  static CsmGenerationConfig from_json(const std::string& path);
  void validate() const;
  std::string to_string() const;
  /// The CLI's --temperature for both decoders: 0 is greedy, T > 0 samples at T (with each
  /// decoder's own top_k / top_p).
  void set_temperature(double temperature);
};

/// The processor's output for one conversation.
struct CsmInputs {
  std::string prompt;       // the rendered chat before <|AUDIO|> is expanded
  torch::Tensor input_ids;  // [1, T] int64, one <|AUDIO|> per context frame
  /// Each context clip's codes in order, int64 [num_codebooks, frames] on the CPU.
  std::vector<torch::Tensor> context_codes;
};

/// One generated frame, handed over as soon as it exists.
struct CsmFrame {
  int64_t index = 0;
  torch::Tensor codes;  // int64 [num_codebooks]
  /// float32 [hop_length] from Mimi's decoder stream; undefined for an all-eos frame (no audio)
  /// and when audio is not decoded.
  torch::Tensor audio;
};

/// Returning false stops generation after this frame.
using CsmFrameCallback = std::function<bool(const CsmFrame&)>;

struct CsmGenerateOptions {
  bool decode_audio = true;  // stream each frame through Mimi's decoder
  /// Keep each step's backbone logits, last hidden state and depth-decoder logits.
  bool return_logits = false;
  CsmFrameCallback on_frame;
};

struct CsmGeneration {
  /// [frames, num_codebooks] int64: transformers' generate sequences without the batch axis.
  torch::Tensor audio_codes;
  torch::Tensor audio;  // float32 [samples]: the frames before the first all-eos one, decoded
  /// With return_logits: [frames, vocab_size] raw codebook-0 logits, [frames, hidden_size] the
  /// backbone's last hidden state, [frames, num_codebooks - 1, vocab_size] raw depth-decoder
  /// logits (row j predicts codebook j + 1); float32.
  torch::Tensor backbone_logits;
  torch::Tensor backbone_last_hidden_state;
  torch::Tensor depth_decoder_logits;
  bool ended = false;  // stopped on the end frame rather than max_new_tokens or the callback
  double prefill_seconds = 0;
  double first_audio_seconds = 0;  // from the call to the first frame's audio
  /// Per frame: the backbone step that fed it (frame 0: in prefill_seconds), the depth decoder,
  /// the codec's decode and the callback.
  std::vector<double> frame_seconds;
};

/// Immutable after loading and safe to share between threads; generate keeps its state local.
class Csm {
 public:
  /// A transformers-format folder (config.json with model_type "csm", model.safetensors,
  /// tokenizer.json, generation_config.json); the codec under codec_model. in float32.
  static std::shared_ptr<const Csm> from_pretrained(const std::string& dir,
                                                    const LoadOptions& options = {});
  /// Whether `dir`'s config.json names a CSM.
  static bool recognizes(const std::string& dir);
  Csm(const std::string& dir, const LoadOptions& options);

  /// The chat template: per turn "<|begin_of_text|>[speaker]text<|end_of_text|>", then
  /// "<|AUDIO|><|audio_eos|>" when it carries audio. Roles are speaker ids (decimal integers).
  static std::string render_chat(const std::vector<ChatMessage>& conversation);
  /// Turns with text parts and at most one audio (or codes) part each: audio at
  /// sampling_rate() is encoded by the codec, codes are checked against it; <|AUDIO|> is
  /// repeated once per frame. alto::InvalidArgument for an empty turn text, a speaker id the
  /// tokenizer cannot encode, text holding the template's special tokens, audio that is not
  /// mono float samples, codes of the wrong shape or outside [0, codebook_size).
  CsmInputs process(const std::vector<ChatMessage>& conversation) const;

  /// The backbone's input [1, T, hidden_size]: text positions from the text table, <|AUDIO|>
  /// positions the summed embeddings of the context frames in order, <|audio_eos|> positions
  /// that of an all-eos frame.
  torch::Tensor embed(const CsmInputs& inputs) const;
  /// codes int64 [..., num_codebooks] -> [..., hidden_size]: the sum over codebooks of the
  /// audio table at code + k * vocab_size.
  torch::Tensor embed_frames(const torch::Tensor& codes) const;

  /// Empty backbone caches for one sequence of up to `capacity` positions.
  TextDecoderState start(int64_t capacity) const;
  /// The backbone: inputs_embeds [1, T, hidden_size] after the state's positions -> final-norm
  /// hidden states; with `intermediates`, each layer's output as "backbone_model.layers.N".
  torch::Tensor forward(const torch::Tensor& inputs_embeds, TextDecoderState& state,
                        Intermediates* intermediates = nullptr) const;
  /// hidden [..., hidden_size] -> codebook-0 logits [..., vocab_size] float32 (lm_head).
  torch::Tensor logits(const torch::Tensor& hidden) const;
  /// The depth decoder for one frame per row: backbone_last_hidden_state [B, hidden_size] and
  /// codebook 0 [B] int64 -> the frame's codes [B, num_codebooks], codebooks 1 .. K-1 chosen
  /// with `config` from `generator`; with `logits`, their raw logits [B, K - 1, vocab_size].
  torch::Tensor decode_depth(const torch::Tensor& backbone_last_hidden_state,
                             const torch::Tensor& first_codes, const GenerationConfig& config,
                             at::Generator& generator, torch::Tensor* logits = nullptr) const;

  /// Generates frames for the prompt until the end frame, max_new_tokens frames or the
  /// callback's false; sampling draws from one generator seeded with config.backbone.seed.
  CsmGeneration generate(const CsmInputs& inputs, const CsmGenerationConfig& config,
                         const CsmGenerateOptions& options = {}) const;
  /// audio_codes [frames, num_codebooks] -> float32 [samples]: Mimi's offline decode of the
  /// frames before the first all-eos one (what generate streams).
  torch::Tensor decode(const torch::Tensor& audio_codes) const;

  const CsmConfig& config() const;
  const CsmGenerationConfig& generation_config() const;
  const LoadOptions& load_options() const;
  const Mimi& codec() const;
  const tokenizers::TextTokenizer& tokenizer() const;
  int64_t sampling_rate() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
