// Audio embeddings for a backbone of your own (llama.cpp, a serving engine): alto runs the audio
// LM's processor, audio encoder and projector; your runtime runs the text decoder.
//
//   audio_lm_embeddings MODEL_DIR AUDIO PROMPT OUT.safetensors
//
// MODEL_DIR is a Qwen2-Audio or Voxtral folder as the Hub ships it. OUT gets:
//   input_ids        int64 [T]          the prompt with every audio placeholder expanded
//   audio_positions  int64 [n]          where each audio row goes in input_ids
//   audio_embeds     float32 [n, hidden] the projected audio, one row per placeholder
// and the program prints the spans of consecutive placeholders. A runtime feeds the text ids
// between spans as tokens and each span as embeddings (llama.cpp: a llama_batch with `embd`
// set, n_tokens = the span's length, at the span's positions), in prompt order; the result is
// the model's own merged inputs_embeds (AudioLmEmbeddings::inputs_embeds).

#include <alto/audio/audio_tensor.h>
#include <alto/audio/load.h>
#include <alto/core/error.h>
#include <alto/core/safetensors.h>
#include <alto/models/audio_language_model.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR AUDIO PROMPT OUT.safetensors\n";
    return 2;
  }
  try {
    const auto model = alto::models::AudioLanguageModel::from_pretrained(argv[1]);
    alto::audio::DecodeOptions decode;
    decode.mono = true;
    decode.sample_rate = model->sampling_rate();
    const torch::Tensor wave = alto::audio::to_tensor(alto::audio::load_audio(argv[2], decode))[0];

    using alto::models::ChatPart;
    const alto::models::AudioLmInputs inputs = model->process(
        {{"user", {ChatPart::audio_part(wave), ChatPart::text_part(argv[3])}}});
    const alto::models::AudioLmEmbeddings e = model->embed(inputs);

    alto::save_safetensors(argv[4], {{"input_ids", e.input_ids[0]},
                                     {"audio_positions", e.audio_positions},
                                     {"audio_embeds", e.audio_embeds}});
    std::cout << model->model_type() << ": " << e.input_ids.size(1) << " prompt tokens, "
              << e.audio_embeds.size(0) << " audio rows of width " << e.audio_embeds.size(1)
              << "\n";
    // The spans of consecutive placeholders, one per audio part.
    const auto positions = e.audio_positions.accessor<int64_t, 1>();
    for (int64_t i = 0; i < positions.size(0);) {
      int64_t end = i + 1;
      while (end < positions.size(0) && positions[end] == positions[end - 1] + 1) ++end;
      std::cout << "audio span: positions [" << positions[i] << ", " << positions[end - 1] + 1
                << ") <- audio_embeds rows [" << i << ", " << end << ")\n";
      i = end;
    }
  } catch (const alto::Error& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
}
