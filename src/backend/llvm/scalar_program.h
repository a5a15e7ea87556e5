// An elementwise operation's native code run without compiling it: the
// scalar LLVM instructions its lowering emits (kiln's vector math among
// them) are read once into a list of steps, and a small interpreter applies
// each step to a block of elements at a time. Each step is one IEEE
// operation with the rounding the compiled kernel gives it (llvm.fmuladd
// fused exactly where the target fuses it), and LLVM's optimizations never
// change a floating value without fast-math flags, so the results are the
// compiled kernel's bit for bit. A graph's first tier runs these instead of
// waiting for a compile of its vector math.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

struct ScalarProgram;

/// The program computing `node` (an elementwise node of f32 or f64 values
/// whose operands are f32 or f64 arrays of its shape), or null where the
/// interpreter cannot run its code: another kind of node or dtype, a call
/// into libmvec (whose vector and scalar versions round differently), an
/// instruction the interpreter does not know. Made once per operation.
std::shared_ptr<const ScalarProgram> scalar_program(const ir::Node& node, std::span<const DType> operand_dtypes);

/// `program` over `count` elements: operand k at operands[k], the result at `result`.
void run_scalar_program(const ScalarProgram& program, std::span<const void* const> operands, void* result,
                        int64_t count);

/// Beyond this many elements a compiled kernel (vector code on every
/// thread) beats the interpreter even counting its compile.
constexpr int64_t interpreted_elements_limit = int64_t{1} << 18;

/// Whether the first tier runs `node` of `graph` by its interpreted program.
bool interprets(const ir::Graph& graph, const ir::Node& node);

/// An executable running `graph` (arguments and one elementwise node, as an
/// eager operation traces) by the node's interpreted program; null where
/// `interprets` would refuse its node.
std::shared_ptr<const runtime::Executable> interpreted_executable(std::shared_ptr<const ir::Graph> graph);

}  // namespace kiln::llvm_backend
