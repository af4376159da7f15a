#pragma once
// One thread count for alto's own parallel work and for libtorch's intra-op pool.

namespace alto {

/// Sets the thread count (>= 1). Debian's libtorch starts with one intra-op thread, so alto's
/// entry points (the CLI's --threads, the Python module) call this explicitly.
void set_num_threads(int threads);
int num_threads();
/// All cores of this machine.
int default_num_threads();

}  // namespace alto
