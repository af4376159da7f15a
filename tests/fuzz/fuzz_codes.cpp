// libFuzzer harness over codes files — the .safetensors `alto encode` writes and `alto decode`,
// `alto transcribe` (Kyutai) and `alto speak --context` (CSM) read — for the golden Mimi, DAC and
// EnCodec test models. The first byte picks the codec (its value mod 3) and how the rest is read
// (below 3: as the file itself; else as a recipe for a well-formed file, so that the codes' shape,
// ids, scales and num_samples reach the codec's checks rather than the header parser, which
// fuzz_safetensors covers):
//   rank (1 byte: 1 + value mod 5), that many dims (1 byte each: value mod 17), flags (1 byte:
//   bit 0 adds scales, bit 1 names another model_type, bit 2 drops num_samples), num_samples
//   (8 bytes, any int64), then int16 values repeated to fill the codes.
// The codes are read for that codec and decoded offline, and through a stream where the codec
// streams. Every outcome must be audio or an alto::Error: a foreign exception (libtorch's, from a
// shape or id the checks let through), a crash or a runaway allocation is a finding.
//
// Like fuzz_configs it links the library as built (ALTO_LIBRARY) and libtorch.

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "scratch_folder.h"

namespace {

using alto::tokenizers::AudioTokenizer;

const std::vector<std::shared_ptr<const AudioTokenizer>>& codecs() {
  static const auto all = [] {
    std::vector<std::shared_ptr<const AudioTokenizer>> loaded;
    for (const char* name :
         {"mimi-tiny-random", "dac-16khz-tiny-random", "encodec-24khz-tiny-random"})
      loaded.push_back(
          AudioTokenizer::from_pretrained(std::string(ALTO_TEST_DATA_DIR "/models/") + name));
    return loaded;
  }();
  return all;
}

// The recipe above as a codes file at `path`; false when the bytes run out first.
bool write_recipe(const uint8_t* data, size_t size, const AudioTokenizer& codec,
                  const std::string& path) {
  size_t at = 0;
  auto next = [&](size_t n) { return at + n <= size ? data + (at += n) - n : nullptr; };
  const uint8_t* rank = next(1);
  if (!rank) return false;
  std::vector<int64_t> shape;
  for (int d = 0; d < 1 + *rank % 5; ++d) {
    const uint8_t* dim = next(1);
    if (!dim) return false;
    shape.push_back(*dim % 17);
  }
  const uint8_t* flags = next(1);
  const uint8_t* count = next(8);
  if (!flags || !count || at + 2 > size) return false;
  int64_t num_samples;
  std::memcpy(&num_samples, count, sizeof num_samples);
  const torch::Tensor codes = torch::empty(shape, torch::kInt64);
  int64_t* ids = codes.data_ptr<int64_t>();
  for (int64_t i = 0; i < codes.numel(); ++i) {
    const size_t j = at + static_cast<size_t>(i) * 2 % (size - at - 1);
    ids[i] = static_cast<int16_t>(data[j] | data[j + 1] << 8);
  }
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"codes", codes}};
  if (*flags & 1) tensors.emplace_back("scales", torch::full({shape[0], 1, 1, 1}, 0.5));
  std::map<std::string, std::string> metadata = {
      {"model_type", *flags & 2 ? "other" : codec.model_type()}};
  if (!(*flags & 4)) metadata["num_samples"] = std::to_string(num_samples);
  alto::save_safetensors(path, tensors, metadata);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string path = scratch_folder("alto_fuzz_codes") + "/codes.safetensors";
  const AudioTokenizer& codec = *codecs()[data[0] % codecs().size()];
  if (data[0] / codecs().size() % 2 == 0) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data) + 1, static_cast<std::streamsize>(size - 1));
  } else if (!write_recipe(data + 1, size - 1, codec, path)) {
    return 0;
  }
  try {
    const alto::tokenizers::AudioCodes codes = alto::tokenizers::load_codes(path, codec);
    codec.decode(codes);
    if (codec.supports_streaming() && !codec.chunked_codes())
      codec.stream()->decode_step(codes.codes);
  } catch (const alto::Error&) {
    // A named error is the expected outcome for a bad file.
  }
  return 0;
}
