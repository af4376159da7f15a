// Allowed: its own layer and below.
#include "alto/core/error.h"
#include "alto/features/frames.h"
