// A column reduction's native code run without compiling it: a floating sum
// or product over leading (or middle) axes, which the compiled kernel adds
// row by row into its output (accumulates_rows), each output element taking
// its rows in order whatever the vector width. The same order in C++ gives
// the compiled kernel's bits, so a graph's first tier (and eager code's
// first calls) need not wait for a compile of its column sums.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

/// Whether `node` of `graph`, run alone as an eager operation, runs
/// interpreted: a sum or product of f32 or f64 values whose compiled kernel
/// accumulates rows, over a static input of at most 2^18 elements (beyond,
/// the compiled kernel on every thread wins even counting its compile).
bool interprets_rows(const ir::Graph& graph, const ir::Node& node);

/// An executable running `graph` (arguments and one such node, as an eager
/// operation traces) interpreted; null where `interprets_rows` refuses its node.
std::shared_ptr<const runtime::Executable> interpreted_rows_executable(std::shared_ptr<const ir::Graph> graph);

}  // namespace kiln::llvm_backend
