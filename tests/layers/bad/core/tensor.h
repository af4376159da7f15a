#pragma once
// core/ including audio/: upward.
#include "alto/audio/audio.h"
