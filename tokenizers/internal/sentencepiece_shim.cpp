// libalto_sentencepiece: the few calls alto makes into libsentencepiece, behind a C interface.
//
// Why a separate module: Debian's libsentencepiece exports the protobuf-lite 3.14 it bundles,
// while libtorch loads the system libprotobuf 3.21. Linked into one process's global symbol
// scope, libprotobuf's initialisers call sentencepiece's copies (a crash at start-up), or
// sentencepiece's code calls libprotobuf's (a fatal version check). libalto therefore loads this
// module with RTLD_LOCAL | RTLD_DEEPBIND (tokenizers/sentencepiece_tokenizer.cpp): each library
// keeps its own protobuf, and no symbol crosses.

#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {

/// A processor for a serialized ModelProto, or null with the reason in `error`.
void* alto_spm_load(const char* data, size_t size, char* error, size_t error_size) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(std::string(data, size));
  if (!status.ok()) {
    std::strncpy(error, status.ToString().c_str(), error_size - 1);
    error[error_size - 1] = '\0';
    return nullptr;
  }
  return processor.release();
}

void alto_spm_free(void* processor) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(processor);
}

int alto_spm_piece_size(const void* processor) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(processor)->GetPieceSize();
}

int alto_spm_piece_to_id(const void* processor, const char* piece, size_t size) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(processor)->PieceToId(
      std::string(piece, size));
}

/// The piece of `id` (valid while the processor lives); its byte length in `size`.
const char* alto_spm_id_to_piece(const void* processor, int id, size_t* size) {
  const std::string& piece =
      static_cast<const sentencepiece::SentencePieceProcessor*>(processor)->IdToPiece(id);
  *size = piece.size();
  return piece.data();
}

/// Bit 0: control, bit 1: unknown, bit 2: byte.
int alto_spm_flags(const void* processor, int id) {
  const auto* p = static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
  return (p->IsControl(id) ? 1 : 0) | (p->IsUnknown(id) ? 2 : 0) | (p->IsByte(id) ? 4 : 0);
}

/// Calls emit(context, id, begin, end) for each piece of `text` (byte offsets into it).
void alto_spm_encode(const void* processor, const char* text, size_t size,
                     void (*emit)(void*, int, uint32_t, uint32_t), void* context) {
  const auto pieces = static_cast<const sentencepiece::SentencePieceProcessor*>(processor)
                          ->EncodeAsImmutableProto(std::string(text, size));
  for (const auto& piece : pieces.pieces()) emit(context, piece.id(), piece.begin(), piece.end());
}

/// SentencePieceProcessor.decode(ids), handed to emit(context, text, size).
void alto_spm_decode(const void* processor, const int* ids, size_t count,
                     void (*emit)(void*, const char*, size_t), void* context) {
  const std::string text = static_cast<const sentencepiece::SentencePieceProcessor*>(processor)
                               ->DecodeIds(std::vector<int>(ids, ids + count));
  emit(context, text.data(), text.size());
}

}  // extern "C"
