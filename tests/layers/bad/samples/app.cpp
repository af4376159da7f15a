// A sample, as an application writes it, reaching into an internal header.
#include <alto/models/audio_language_model.h>
#include <alto/core/internal/blas.h>
