#include "alto/models/kyutai_speech_to_text/speech_to_text_stream.h"

#include <torch/torch.h>

#include <deque>
#include <optional>

#include "alto/audio/resample.h"
#include "alto/core/error.h"
#include "alto/tokenizers/audio_tokenizer.h"

namespace alto::models {

const OptionSchema<SpeechToTextStreamOptions>& SpeechToTextStreamOptions::schema() {
  using O = SpeechToTextStreamOptions;
  static const auto schema = OptionSchema<O>("SpeechToTextStreamOptions")
                                 .field("resample", &O::resample,
                                        "Resample audio at another rate instead of rejecting it");
  return schema;
}

std::string SpeechToTextStreamOptions::to_string() const { return schema().to_string(*this); }

namespace {

// One stream's own state; the decoder's lives in its row of the batch's state.
struct Slot {
  bool open = false;
  bool input_done = false;
  bool done = false;
  std::unique_ptr<tokenizers::AudioTokenizerStream> codec;
  std::optional<audio::Resampler> resampler;
  int64_t input_rate = 0;
  int64_t samples_received = 0;
  // Frames to step: undefined for the audio-BOS step, else int64 [K].
  std::deque<torch::Tensor> pending;
  int64_t steps = 0;
  int64_t last_token = 0;
  std::vector<int64_t> token_ids;
  std::optional<WordAssembler> words;
  std::vector<TimedWord> all_words, new_words;
};

}  // namespace

struct SpeechToTextBatch::Impl {
  std::shared_ptr<const KyutaiSpeechToText> model;
  SpeechToTextStreamOptions options;
  std::vector<Slot> slots;
  KyutaiSpeechToTextState state;

  Slot& slot(int64_t index, const char* caller) {
    ALTO_CHECK(index >= 0 && index < static_cast<int64_t>(slots.size()), "SpeechToTextBatch::",
               caller, ": slot ", index, " does not exist (slots 0 to ", slots.size() - 1, ")");
    ALTO_CHECK(slots[index].open, "SpeechToTextBatch::", caller, ": slot ", index,
               " has no open stream");
    return slots[index];
  }
  const Slot& slot(int64_t index, const char* caller) const {
    return const_cast<Impl*>(this)->slot(index, caller);
  }

  // Samples at the model's rate through the slot's Mimi encoder; completed frames are queued.
  void encode(Slot& s, const torch::Tensor& samples) {
    if (samples.numel() == 0) return;
    const torch::Tensor codes = s.codec->encode_step(samples.view({1, 1, -1}));
    for (int64_t t = 0; t < codes.size(2); ++t) s.pending.push_back(codes[0].select(1, t).cpu());
  }
  void encode_flush(Slot& s) {
    const torch::Tensor codes = s.codec->encode_flush();
    if (!codes.defined()) return;
    for (int64_t t = 0; t < codes.size(2); ++t) s.pending.push_back(codes[0].select(1, t).cpu());
  }
};

SpeechToTextBatch::SpeechToTextBatch(std::shared_ptr<const KyutaiSpeechToText> model,
                                     int64_t slots, const SpeechToTextStreamOptions& options)
    : impl_(std::make_unique<Impl>()) {
  ALTO_CHECK(model, "SpeechToTextBatch: no model");
  ALTO_CHECK(slots > 0, "SpeechToTextBatch: slots must be > 0, got ", slots);
  impl_->model = std::move(model);
  impl_->options = options;
  impl_->slots.resize(slots);
  impl_->state = impl_->model->start(slots);
}

SpeechToTextBatch::~SpeechToTextBatch() = default;

int64_t SpeechToTextBatch::open() {
  for (size_t i = 0; i < impl_->slots.size(); ++i) {
    if (impl_->slots[i].open) continue;
    Slot& s = impl_->slots[i];
    s = Slot();
    s.open = true;
    s.codec = impl_->model->codec().stream();
    s.words.emplace(impl_->model->word_assembler());
    s.last_token = impl_->model->config().bos_token_id;
    s.pending.emplace_back();  // the audio-BOS step
    impl_->state.positions.reset_row(static_cast<int64_t>(i));
    // The processor's silence before the audio.
    impl_->encode(s, torch::zeros({impl_->model->processor_config().prefix_samples()}));
    return static_cast<int64_t>(i);
  }
  return -1;
}

void SpeechToTextBatch::close(int64_t slot) {
  Slot& s = impl_->slot(slot, "close");
  s = Slot();
}

void SpeechToTextBatch::accept_waveform(int64_t slot, int64_t sample_rate,
                                        const torch::Tensor& samples) {
  Slot& s = impl_->slot(slot, "accept_waveform");
  ALTO_CHECK(!s.input_done, "SpeechToTextBatch::accept_waveform: slot ", slot,
             " was fed after input_finished()");
  ALTO_CHECK(samples.defined() && samples.is_floating_point() &&
                 (samples.dim() == 1 || (samples.dim() == 2 && samples.size(0) == 1)),
             "SpeechToTextBatch::accept_waveform: samples must be float mono [n] or [1, n], got ",
             samples.defined() ? samples.sizes() : c10::IntArrayRef{});
  ALTO_CHECK(sample_rate > 0, "SpeechToTextBatch::accept_waveform: sample_rate must be > 0, got ",
             sample_rate);
  const int64_t rate = impl_->model->sample_rate();
  ALTO_CHECK(sample_rate == rate || impl_->options.resample,
             "SpeechToTextBatch::accept_waveform: audio at ", sample_rate, " Hz, the model takes ",
             rate, " Hz (resample it, or set SpeechToTextStreamOptions.resample)");
  ALTO_CHECK(s.input_rate == 0 || s.input_rate == sample_rate,
             "SpeechToTextBatch::accept_waveform: slot ", slot, " started at ", s.input_rate,
             " Hz and cannot change to ", sample_rate, " Hz");
  const torch::Tensor wave = samples.reshape({-1}).to(torch::kFloat32).cpu().contiguous();
  ALTO_CHECK(torch::isfinite(wave).all().item<bool>(),
             "SpeechToTextBatch::accept_waveform: the samples hold NaN or infinite values");
  s.input_rate = sample_rate;
  s.samples_received += wave.numel();
  if (sample_rate == rate) return impl_->encode(s, wave);
  if (!s.resampler)
    s.resampler.emplace(audio::ResamplerOptions{static_cast<int>(sample_rate),
                                                static_cast<int>(rate), 1});
  audio::Audio chunk(1, wave.numel(), static_cast<int>(sample_rate));
  std::copy(wave.data_ptr<float>(), wave.data_ptr<float>() + wave.numel(), chunk.samples.begin());
  const audio::Audio out = s.resampler->process(chunk);
  impl_->encode(s, torch::from_blob(const_cast<float*>(out.samples.data()), {out.frames},
                                    torch::kFloat32)
                       .clone());
}

void SpeechToTextBatch::input_finished(int64_t slot) {
  Slot& s = impl_->slot(slot, "input_finished");
  ALTO_CHECK(!s.input_done, "SpeechToTextBatch::input_finished: slot ", slot,
             " is already finished");
  if (s.resampler) {
    const audio::Audio rest = s.resampler->flush();
    impl_->encode(s, torch::from_blob(const_cast<float*>(rest.samples.data()), {rest.frames},
                                      torch::kFloat32)
                         .clone());
  }
  // The processor's silence after the audio lets the delayed text catch up.
  impl_->encode(s, torch::zeros({impl_->model->processor_config().suffix_samples()}));
  impl_->encode_flush(s);
  s.input_done = true;
}

int64_t SpeechToTextBatch::step() {
  const KyutaiSpeechToText& model = *impl_->model;
  const KyutaiSpeechToTextConfig& c = model.config();
  const int64_t n = slots();
  std::vector<int64_t> rows;
  torch::Tensor text = torch::full({n}, c.audio_pad_token_id, torch::kInt64);
  torch::Tensor codes = torch::full({n, c.num_codebooks}, c.audio_pad_token_id, torch::kInt64);
  torch::Tensor advancing = torch::zeros({n}, torch::kBool);
  for (int64_t i = 0; i < n; ++i) {
    Slot& s = impl_->slots[i];
    if (!s.open || s.pending.empty()) continue;
    rows.push_back(i);
    text[i] = s.last_token;
    codes[i] = s.pending.front().defined()
                   ? s.pending.front()
                   : torch::full({c.num_codebooks}, c.audio_bos_token_id, torch::kInt64);
    advancing[i] = true;
  }
  if (!rows.empty()) {
    const bool all = static_cast<int64_t>(rows.size()) == n;
    const torch::Tensor ids = torch::cat({text.unsqueeze(1), codes}, 1).unsqueeze(1);
    const torch::Tensor logits = model.logits(
        model.forward(model.embed(ids), impl_->state, all ? torch::Tensor() : advancing));
    const torch::Tensor tokens = logits.view({n, -1}).argmax(-1).cpu();
    for (int64_t i : rows) {
      Slot& s = impl_->slots[i];
      s.pending.pop_front();
      s.last_token = tokens[i].item<int64_t>();
      s.token_ids.push_back(s.last_token);
      for (auto& w : s.words->push(s.last_token, s.steps)) {
        s.all_words.push_back(w);
        s.new_words.push_back(std::move(w));
      }
      ++s.steps;
    }
  }
  for (Slot& s : impl_->slots) {
    if (!s.open || !s.input_done || s.done || !s.pending.empty()) continue;
    for (auto& w : s.words->finish()) {
      s.all_words.push_back(w);
      s.new_words.push_back(std::move(w));
    }
    s.done = true;
  }
  return static_cast<int64_t>(rows.size());
}

void SpeechToTextBatch::run() {
  while (step() > 0) {
  }
}

std::vector<TimedWord> SpeechToTextBatch::take_words(int64_t slot) {
  Slot& s = impl_->slot(slot, "take_words");
  std::vector<TimedWord> out;
  out.swap(s.new_words);
  return out;
}

SpeechToTextTranscript SpeechToTextBatch::transcript(int64_t slot) const {
  const Slot& s = impl_->slot(slot, "transcript");
  SpeechToTextTranscript out;
  out.token_ids = s.token_ids;
  out.text = impl_->model->tokenizer()->decode(s.token_ids, true);
  out.words = s.all_words;
  return out;
}

bool SpeechToTextBatch::done(int64_t slot) const { return impl_->slot(slot, "done").done; }
int64_t SpeechToTextBatch::pending_frames(int64_t slot) const {
  return static_cast<int64_t>(impl_->slot(slot, "pending_frames").pending.size());
}
double SpeechToTextBatch::seconds_received(int64_t slot) const {
  const Slot& s = impl_->slot(slot, "seconds_received");
  return s.input_rate > 0 ? static_cast<double>(s.samples_received) / s.input_rate : 0.0;
}
int64_t SpeechToTextBatch::slots() const { return static_cast<int64_t>(impl_->slots.size()); }
const KyutaiSpeechToText& SpeechToTextBatch::model() const { return *impl_->model; }

SpeechToTextStream::SpeechToTextStream(std::shared_ptr<const KyutaiSpeechToText> model,
                                       const SpeechToTextStreamOptions& options)
    : batch_(std::move(model), 1, options), slot_(batch_.open()) {}

std::vector<TimedWord> SpeechToTextStream::accept_waveform(int64_t sample_rate,
                                                           const torch::Tensor& samples) {
  batch_.accept_waveform(slot_, sample_rate, samples);
  batch_.run();
  return batch_.take_words(slot_);
}

std::vector<TimedWord> SpeechToTextStream::input_finished() {
  batch_.input_finished(slot_);
  batch_.run();
  return batch_.take_words(slot_);
}

void SpeechToTextStream::reset() {
  batch_.close(slot_);
  slot_ = batch_.open();
}

SpeechToTextTranscript SpeechToTextStream::transcript() const { return batch_.transcript(slot_); }
double SpeechToTextStream::seconds_received() const { return batch_.seconds_received(slot_); }

}  // namespace alto::models
