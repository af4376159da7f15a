// A codec factory that includes an architecture: tokenizers/ is below models/.
#include "alto/models/mimi.h"
