// AudioStreamReader: chunks concatenate to load_audio's result, from files, memory and pipes.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "alto/audio/load.h"
#include "alto/audio/stream_reader.h"
#include "test_util.h"

using namespace alto;
using alto::test::data_path;

namespace {
audio::Audio concatenate(audio::AudioStreamReader& reader, int64_t chunk_frames) {
  audio::Audio all(reader.channels(), 0, reader.sample_rate());
  audio::Audio chunk;
  bool last_seen = false;
  while (reader.read(chunk)) {
    REQUIRE_FALSE(last_seen);  // only the final chunk may be short
    if (chunk.frames < chunk_frames) last_seen = true;
    REQUIRE(chunk.frames <= chunk_frames);
    all.append(chunk);
  }
  CHECK(chunk.frames == 0);
  return all;
}
}  // namespace

TEST_CASE("streamed chunks equal load_audio for every chunk size", "[audio][streaming]") {
  audio::DecodeOptions options;
  options.mono = true;
  options.sample_rate = 16000;
  for (const char* name : {"stereo44k_f32.wav", "stereo44k.mp3", "stereo44k.webm"}) {
    audio::Audio offline = audio::load_audio(data_path(name), options);
    for (int64_t chunk : {1, 160, 1000, 4097}) {
      INFO(name << ", chunk " << chunk);
      audio::AudioStreamReader reader(data_path(name), options, chunk);
      CHECK(reader.sample_rate() == 16000);
      CHECK(concatenate(reader, chunk).samples == offline.samples);
    }
  }
}

TEST_CASE("offset and duration stream like they load", "[audio][streaming]") {
  audio::DecodeOptions options;
  options.offset = 0.1;
  options.duration = 0.3;
  options.sample_rate = 16000;
  audio::Audio offline = audio::load_audio(data_path("stereo44k_f32.wav"), options);
  CHECK(offline.frames == 4800);
  audio::AudioStreamReader reader(data_path("stereo44k_f32.wav"), options, 333);
  CHECK(concatenate(reader, 333).samples == offline.samples);
}

TEST_CASE("a named pipe streams like the file", "[audio][streaming]") {
  std::string fifo = test::temp_path("pipe.webm");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto bytes = test::read_bytes(data_path("stereo44k.webm"));
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  audio::DecodeOptions options;
  options.mono = true;
  audio::AudioStreamReader reader(fifo, options, 480);
  audio::Audio streamed = concatenate(reader, 480);
  writer.join();
  CHECK(streamed.samples == audio::load_audio(data_path("stereo44k.webm"), options).samples);
}

TEST_CASE("a reader over memory equals one over the file", "[audio][streaming]") {
  auto bytes = test::read_bytes(data_path("stereo44k.m4a"));
  audio::AudioStreamReader from_memory(bytes.data(), bytes.size(), {}, 512);
  audio::AudioStreamReader from_file(data_path("stereo44k.m4a"), {}, 512);
  CHECK(from_memory.source_info().codec == "aac");
  CHECK(concatenate(from_memory, 512).samples == concatenate(from_file, 512).samples);
}
