// The first tier of a jitted graph: its nodes run one at a time, as eager
// code runs them, while the optimized executable compiles on another thread.
// It needs no compile of its own and gives the optimized code's results bit
// for bit: a node whose native code rounds unlike its reference kernel
// (kiln's vector math, floating sums; ops::native_differs_from_reference)
// runs what eager code runs for it in a first tier: the backend's
// interpretation of its native code (kiln's vector math:
// Backend::interpret), else its compiled single-operation kernel (with quick
// machine code: runtime::CodeQuality); matrix products
// run BLAS as compiled graphs do, reading a transpose of their operands as a
// flag, and every other node its reference kernel, which computes what the
// fused kernel computes. Trees of elementwise nodes run as one interpreted
// operation, their broadcasts read in place (fused_trees.h).
#pragma once

#include <memory>

#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::interp {

/// Whether `graph` run op by op gives its fused code's results bit for bit.
/// Not where a half-precision elementwise value feeds a fused consumer (the
/// fused kernel keeps it in f32, op by op rounds it to its dtype), nor with
/// floating sin, cos or pow (libm and libmvec round them differently).
bool op_by_op_exact(const ir::Graph& graph);

/// `graph` prepared to run op by op (a symbolic graph once per binding of its symbols).
std::shared_ptr<const runtime::Executable> op_by_op_executable(std::shared_ptr<const ir::Graph> graph);

}  // namespace kiln::interp
