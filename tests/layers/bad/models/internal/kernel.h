#pragma once
// Kernels depend on nothing above them.
#include "alto/models/blocks/basic.h"
