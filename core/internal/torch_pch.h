#pragma once
// Precompiled for every translation unit that uses libtorch: <torch/torch.h> alone costs
// about 20 s of compile time per file.
#include <torch/torch.h>
