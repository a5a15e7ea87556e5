// A reduction over the innermost axis run without compiling it: a floating
// sum or product whose compiled kernel keeps the vector shape kiln fixes
// (inner_reduction_shape: f64 lanes, partial vectors, short rows folded into
// masked vectors), followed in C++ in the same order, with the compiled
// kernel's bits. With interpreted_rows.h, a graph's first tier and eager
// code's first calls need no compile for their floating sums.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

/// Whether `node` of `graph`, run alone as an eager operation, runs
/// interpreted: a sum or product of f32 or f64 values over their innermost
/// axis, of a static input of at most 2^18 elements, not split across
/// threads (a reduction to one value of 2^16 elements or more).
bool interprets_inner(const ir::Graph& graph, const ir::Node& node);

/// An executable running `graph` (arguments and one such node, as an eager
/// operation traces) interpreted; null where `interprets_inner` refuses its node.
std::shared_ptr<const runtime::Executable> interpreted_inner_executable(std::shared_ptr<const ir::Graph> graph);

}  // namespace kiln::llvm_backend
