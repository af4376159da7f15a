// libFuzzer harness over alto's JSON config readers — the config.json, generation_config.json,
// preprocessor_config.json and processor_config.json of a downloaded model folder. The first
// byte picks the reader, the rest is the file; every reader parses, validates and describes it.
// Every outcome must be a config or an alto::Error: no other exception, crash or hang.
//
// Unlike the other harnesses this one links the library as built (libalto and libtorch are not
// instrumented): the readers' risk is a JSON type or range slipping past them as a foreign
// exception, which needs no instrumentation to be seen.

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "alto/core/error.h"
#include "alto/features/feature_extractor.h"
#include "alto/models/csm/csm.h"
#include "alto/models/dac.h"
#include "alto/models/encodec.h"
#include "alto/models/generation.h"
#include "alto/models/kyutai_speech_to_text/kyutai_speech_to_text.h"
#include "alto/models/mimi.h"
#include "alto/models/text_decoder.h"
#include "alto/models/whisper/config.h"
#include "alto/models/whisper/decoding.h"
#include "scratch_folder.h"

namespace {

using namespace alto::models;

// Each reads `dir`/`file` and checks what it read.
struct Reader {
  const char* file;
  std::function<void(const std::string& dir)> read;
};

const std::vector<Reader>& readers() {
  static const std::vector<Reader> all = {
      {"config.json", [](const std::string& d) { WhisperConfig::from_json(d).validate(); }},
      {"config.json", [](const std::string& d) { MimiConfig::from_json(d).validate(); }},
      {"config.json", [](const std::string& d) { EncodecConfig::from_json(d).validate(); }},
      {"config.json", [](const std::string& d) { DacConfig::from_json(d).validate(); }},
      {"config.json", [](const std::string& d) { TextDecoderConfig::from_json(d).validate(); }},
      {"config.json",
       [](const std::string& d) { KyutaiSpeechToTextConfig::from_json(d).validate(); }},
      {"config.json", [](const std::string& d) { CsmConfig::from_json(d).validate(); }},
      {"generation_config.json",
       [](const std::string& d) {
         GenerationConfig::from_json(d + "/generation_config.json").validate();
       }},
      {"generation_config.json",
       [](const std::string& d) {
         WhisperGenerationConfig::from_json(d + "/generation_config.json");
       }},
      {"generation_config.json",
       [](const std::string& d) {
         CsmGenerationConfig::from_json(d + "/generation_config.json").validate();
       }},
      {"preprocessor_config.json",
       [](const std::string& d) { alto::features::FeatureExtractor::from_pretrained(d); }},
      {"preprocessor_config.json",
       [](const std::string& d) {
         DacFeatureExtractorOptions::from_json(d + "/preprocessor_config.json").validate();
       }},
      {"processor_config.json",
       [](const std::string& d) { KyutaiSpeechToTextProcessorConfig::from_pretrained(d); }},
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string& dir = scratch_folder("alto_fuzz_configs");
  const Reader& reader = readers()[data[0] % readers().size()];
  for (const char* file : {"config.json", "generation_config.json", "preprocessor_config.json",
                           "processor_config.json"})
    std::remove((dir + "/" + file).c_str());
  std::ofstream(dir + "/" + reader.file, std::ios::binary)
      .write(reinterpret_cast<const char*>(data) + 1, static_cast<std::streamsize>(size - 1));
  try {
    reader.read(dir);
  } catch (const alto::Error&) {
    // A named error is the expected outcome for a bad file.
  }
  return 0;
}
