#include "alto/models/whisper/transcriber.h"

#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "alto/core/error.h"
#include "alto/core/text.h"

namespace alto::models {

double compression_ratio(const std::string& text) {
  if (text.empty()) return 0.0;
  uLongf size = compressBound(text.size());
  std::vector<Bytef> out(size);
  // Python's zlib.compress: default level, zlib container.
  const int rc = compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()),
                           text.size(), Z_DEFAULT_COMPRESSION);
  ALTO_CHECK_AS(Error, rc == Z_OK, "zlib compress2 failed (", rc, ")");
  return static_cast<double>(text.size()) / static_cast<double>(size);
}

void WhisperTranscribeOptions::validate() const {
  decoding.validate();
  ALTO_CHECK(!temperatures.empty(), "WhisperTranscribeOptions.temperatures must not be empty");
  for (double t : temperatures)
    ALTO_CHECK(t >= 0 && std::isfinite(t),
               "WhisperTranscribeOptions.temperatures must be >= 0, got ", t);
}

std::shared_ptr<const WhisperTranscriber> WhisperTranscriber::from_pretrained(
    const std::string& model_dir, const LoadOptions& options, const std::string& tokenizer) {
  auto extractor = features::FeatureExtractor::from_pretrained(model_dir);
  const auto* whisper = dynamic_cast<const features::WhisperFeatureExtractor*>(extractor.get());
  ALTO_CHECK(whisper, model_dir,
             "/preprocessor_config.json: expected a WhisperFeatureExtractor, got ",
             extractor->name());
  const tokenizers::BpeTokenizer text =
      *tokenizers::BpeTokenizer::from_pretrained(tokenizer.empty() ? model_dir : tokenizer);
  return std::make_shared<const WhisperTranscriber>(*Whisper::from_pretrained(model_dir, options),
                                                    *whisper, text,
                                                    WhisperGenerationConfig::from_json(model_dir));
}

WhisperTranscriber::WhisperTranscriber(Whisper model, features::WhisperFeatureExtractor extractor,
                                       tokenizers::BpeTokenizer tokenizer,
                                       WhisperGenerationConfig generation)
    : model_(model),
      extractor_(std::move(extractor)),
      tokenizer_(std::move(tokenizer)),
      decoder_(model, WhisperSpecialTokens::for_vocab_size(model.config().vocab_size),
               std::move(generation)) {
  ALTO_CHECK(extractor_.options().feature_size == model_.config().num_mel_bins,
             "the feature extractor makes ", extractor_.options().feature_size,
             " mel bins but the model expects num_mel_bins ", model_.config().num_mel_bins);
  ALTO_CHECK(extractor_.options().nb_max_frames() == model_.config().input_frames(),
             "the feature extractor's ", extractor_.options().nb_max_frames(),
             "-frame window does not fit the model's ", model_.config().input_frames());
  const WhisperSpecialTokens& special = decoder_.special_tokens();
  const WhisperSpecialTokens named = WhisperSpecialTokens::from_tokenizer(tokenizer_);
  ALTO_CHECK(named.sot == special.sot && named.eot == special.eot &&
                 named.timestamp_begin == special.timestamp_begin,
             "the tokenizer's special tokens (<|startoftranscript|> ", named.sot,
             ") do not match the model's vocabulary (", special.sot, ")");
}

std::string WhisperTranscriber::text_of(const std::vector<int64_t>& tokens) const {
  std::vector<int64_t> text;
  for (int64_t t : tokens)
    if (t < decoder_.special_tokens().eot) text.push_back(t);
  return tokenizer_.decode(text);
}

WhisperDecodingResult WhisperTranscriber::decode_with_fallback(
    const torch::Tensor& encoder_output, WhisperDecodingOptions decoding,
    const WhisperTranscribeOptions& options) const {
  WhisperDecodingResult result;
  for (double temperature : options.temperatures) {
    decoding.temperature = temperature;
    // Sampling replaces beam search at temperature > 0, as openai-whisper does.
    WhisperDecodingOptions attempt = decoding;
    if (temperature > 0) attempt.beam_size = 0;
    result = decoder_.decode(encoder_output, attempt);
    result.compression_ratio = compression_ratio(strip(text_of(result.tokens)));
    bool fallback = options.compression_ratio_threshold &&
                    result.compression_ratio > *options.compression_ratio_threshold;
    if (options.logprob_threshold && result.avg_logprob < *options.logprob_threshold)
      fallback = true;
    // Silence: a low logprob is expected there, and retrying cannot help.
    if (options.no_speech_threshold && result.no_speech_prob > *options.no_speech_threshold &&
        options.logprob_threshold && result.avg_logprob < *options.logprob_threshold)
      fallback = false;
    if (!fallback) break;
  }
  return result;
}

WhisperTranscript WhisperTranscriber::transcribe(const torch::Tensor& wave,
                                                 const WhisperTranscribeOptions& options) const {
  options.validate();
  ALTO_CHECK(wave.dim() == 1 && wave.size(0) > 0,
             "WhisperTranscriber::transcribe: expected mono samples [samples], got ", wave.sizes());
  const auto& fe = extractor_.options();
  const int64_t window = fe.nb_max_frames();
  const double frame_seconds = static_cast<double>(fe.hop_length) / fe.sampling_rate;
  // Each encoder frame covers two mel frames; a timestamp step is one encoder frame.
  const int64_t input_stride = window / model_.config().max_source_positions;
  const double time_precision = input_stride * frame_seconds;
  const WhisperSpecialTokens& special = decoder_.special_tokens();

  // The log-mel of the whole recording followed by a window of silence, so that the last
  // window is padded the way a single 30 s clip is.
  features::PaddingOptions unpadded;
  unpadded.padding = features::PaddingOptions::Strategy::kLongest;
  unpadded.truncation = false;
  const torch::Tensor padded =
      torch::cat({wave.to(torch::kFloat32).flatten(), torch::zeros({fe.n_samples()})});
  const torch::Tensor mel = extractor_.compute(padded, unpadded);
  const int64_t content_frames = mel.size(1) - window;
  const double total_seconds = content_frames * frame_seconds;

  WhisperDecodingOptions decoding = options.decoding;
  decoding.timestamps = options.decoding.timestamps || content_frames > window;
  auto encode = [&](int64_t seek) {
    torch::Tensor segment = mel.narrow(1, seek, std::min(window, mel.size(1) - seek));
    if (segment.size(1) < window)
      segment = torch::constant_pad_nd(segment, {0, window - segment.size(1)});
    return model_.encode(segment.unsqueeze(0));
  };

  WhisperTranscript transcript;
  std::vector<int64_t> all_tokens;
  if (!strip(options.initial_prompt).empty())
    all_tokens = tokenizer_.encode(" " + strip(options.initial_prompt));
  const size_t prompt_tokens = all_tokens.size();
  size_t prompt_reset_since = 0;
  int64_t seek = 0;
  while (seek < content_frames) {
    const int64_t window_start = seek;
    const double time_offset = seek * frame_seconds;
    const int64_t segment_size = std::min(window, content_frames - seek);
    const torch::Tensor encoder_output = encode(seek);
    if (decoding.language.empty() && special.multilingual())
      decoding.language = decoder_.most_likely_language(encoder_output);
    decoding.prompt.assign(all_tokens.begin() + prompt_reset_since, all_tokens.end());
    const WhisperDecodingResult result = decode_with_fallback(encoder_output, decoding, options);
    transcript.language = result.language;
    const std::vector<int64_t>& tokens = result.tokens;

    if (options.no_speech_threshold && result.no_speech_prob > *options.no_speech_threshold &&
        !(options.logprob_threshold && result.avg_logprob > *options.logprob_threshold)) {
      seek += segment_size;  // silence
      if (options.progress)
        options.progress(std::min(seek * frame_seconds, total_seconds), total_seconds);
      continue;
    }

    std::vector<WhisperSegment> current;
    auto add_segment = [&](double start, double end, std::vector<int64_t> segment_tokens) {
      WhisperSegment s;
      s.start = start;
      s.end = end;
      s.text = text_of(segment_tokens);
      s.tokens = std::move(segment_tokens);
      s.temperature = result.temperature;
      s.avg_logprob = result.avg_logprob;
      s.compression_ratio = result.compression_ratio;
      s.no_speech_prob = result.no_speech_prob;
      current.push_back(std::move(s));
    };
    auto timestamp_seconds = [&](int64_t token) {
      return static_cast<double>(token - special.timestamp_begin) * time_precision;
    };
    const size_t n = tokens.size();
    auto is_ts = [&](size_t i) { return special.is_timestamp(tokens[i]); };
    const bool single_timestamp_ending = n >= 2 && !is_ts(n - 2) && is_ts(n - 1);
    std::vector<size_t> slices;  // ends of segments: after each pair of timestamps
    for (size_t i = 1; i < n; ++i)
      if (is_ts(i - 1) && is_ts(i)) slices.push_back(i);
    if (!slices.empty()) {
      if (single_timestamp_ending) slices.push_back(n);
      size_t last_slice = 0;
      for (size_t slice : slices) {
        std::vector<int64_t> part(tokens.begin() + last_slice, tokens.begin() + slice);
        add_segment(time_offset + timestamp_seconds(part.front()),
                    time_offset + timestamp_seconds(part.back()), part);
        last_slice = slice;
      }
      if (single_timestamp_ending)
        seek += segment_size;
      else
        seek += (tokens[last_slice - 1] - special.timestamp_begin) * input_stride;
    } else {
      double duration = segment_size * frame_seconds;
      for (size_t i = n; i-- > 0;) {
        if (!is_ts(i)) continue;
        if (tokens[i] != special.timestamp_begin) duration = timestamp_seconds(tokens[i]);
        break;
      }
      add_segment(time_offset, time_offset + duration, tokens);
      seek += segment_size;
    }
    for (WhisperSegment& s : current) {
      if (s.start == s.end || strip(s.text).empty()) {
        s.text.clear();
        s.tokens.clear();
      }
      all_tokens.insert(all_tokens.end(), s.tokens.begin(), s.tokens.end());
      if (s.text.empty()) continue;
      if (options.clamp_segments) {
        s.start = std::min(s.start, total_seconds);
        s.end = std::min(s.end, total_seconds);
      }
      transcript.segments.push_back(s);
    }
    // The timestamp rules make every window advance; this guards a model that defeats them.
    if (seek <= window_start) seek = window_start + segment_size;
    if (!options.condition_on_previous_text || result.temperature > 0.5)
      prompt_reset_since = all_tokens.size();
    if (options.progress)
      options.progress(std::min(seek * frame_seconds, total_seconds), total_seconds);
  }
  transcript.text =
      text_of(std::vector<int64_t>(all_tokens.begin() + prompt_tokens, all_tokens.end()));
  return transcript;
}

}  // namespace alto::models
