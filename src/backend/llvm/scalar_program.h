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

#include <memory>

#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

/// Whether `node` of `graph`, run alone as an eager operation, has an
/// interpreted program: an elementwise node of f32, f64 or bool values over
/// such operands of its shape, of at most 2^18 elements (beyond, a compiled
/// kernel on every thread wins even counting its compile), whose scalar code
/// the interpreter can run (not a call into libmvec, whose vector and scalar
/// versions round differently). Programs are made once per operation.
bool interprets(const ir::Graph& graph, const ir::Node& node);

/// An executable running `graph` by an interpreted program: arguments and
/// one elementwise node, as an eager operation traces, or a tree of them as
/// a first tier fuses it (interp/fused_trees.h), reading some arguments
/// through broadcasts along leading axes (in place, unbroadcast), its
/// program composed of its nodes'. Null where `interprets` would refuse a
/// node (`at_any_size`: save for its size).
std::shared_ptr<const runtime::Executable> interpreted_executable(std::shared_ptr<const ir::Graph> graph,
                                                                  bool at_any_size = false);

}  // namespace kiln::llvm_backend
