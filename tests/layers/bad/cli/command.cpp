// The CLI uses the public API only, and never the Python module.
#include "alto/core/internal/json_config.h"
#include "bindings/common.h"
