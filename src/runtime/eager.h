// Eager operations on large arrays run compiled kernels instead of the
// reference kernels: the operation is traced into a tiny graph and looked up
// in the process-wide graph cache, so each (operation, dtypes, shapes)
// compiles once — and elementwise kernels, whose code does not depend on the
// shape, once per operation and dtypes.
#pragma once

#include <span>

#include "kiln/jit.h"

namespace kiln::runtime {

/// Whether an eager operation producing or reading `elements` values runs
/// compiled (large enough to pay for the lookup, native backend selected).
bool eager_compiled(int64_t elements);

/// Traces `build` on placeholders for `inputs` and runs the compiled graph.
Array run_compiled(std::span<const Array> inputs, detail::FunctionRef<Array(std::span<const Array>)> build);

}  // namespace kiln::runtime
