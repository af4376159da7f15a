#pragma once
// A public block header exposing an internal kernel header.
#include "alto/models/internal/conv.h"
