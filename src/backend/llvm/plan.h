// Fusion planning: which nodes are computed together in one loop nest, which
// values live in memory, and the order of steps an executable runs.
//
// Elementwise nodes (unary, binary, select, broadcast, literal, iota) fuse
// into the kernel of the materialized value that consumes them; a reduction
// fuses with its elementwise producers; a reshape of a materialized value is
// a view of the same memory; matmul is a BLAS call (a transpose feeding it is
// folded into the call); every other primitive is a standalone native kernel,
// or runs its reference kernel (reported once) where none exists. A value is
// materialized when it is an output, feeds a non-fusible step or a reshape,
// or is read by several kernels and costs more than a few operations to
// recompute. Values computed from literals alone are folded when compiled.
//
// A symbolic graph is planned once for every size: shapes are compared as
// polynomials, never at their hints, and the sizes of a plan (parallel
// ranges, rows of a row group) are polynomials evaluated per call; the
// hints only steer choices that are correct at every size (prefetching,
// slicing a reduction, forming row groups).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"
#include "runtime/step_program.h"

namespace kiln::llvm_backend {

struct Kernel {
  // standalone: one non-fusible node whose leaves are its inputs, in order.
  enum class Kind { elementwise, reduce, standalone } kind = Kind::elementwise;
  ir::ValueId root = -1;            // the value the kernel writes
  std::vector<ir::ValueId> region;  // nodes computed inside, inputs first (see canonical_regions)
  std::vector<ir::ValueId> leaves;  // materialized values it reads, in parameter order
  // Flat elementwise kernels may write further values of the root's shape
  // computed in the same loop (sibling or consumer kernels merged into one).
  std::vector<ir::ValueId> extra_roots;
  // Flat kernels streaming far more than the caches hold prefetch ahead in
  // software (see mark_prefetching in plan.cpp).
  bool prefetch = false;
  // A reduction to one value over many elements runs in slices across
  // threads, whose results are then combined (see mark_chunked in plan.cpp).
  bool chunked = false;
};

struct Step {
  // constant: computed from literals alone and small — evaluated once when
  // the graph is compiled, no kernel generated.
  // control: a loop or branch (or one of its results), run with the compiled
  // code of its bodies (ops::run_control).
  enum class Kind { kernel, matmul, view, reference, constant, control } kind = Kind::kernel;
  ir::ValueId value = -1;
  int kernel = -1;  // index into Plan::kernels for Kind::kernel
  // Matmul operands as stored: a transpose of the last two axes feeding a
  // matmul is not materialized; BLAS reads its input transposed instead.
  ir::ValueId operand_a = -1, operand_b = -1;
  bool transpose_a = false, transpose_b = false;
};

/// Consecutive steps that run together, block of rows by block of rows, so
/// that what one kernel writes the next reads from cache instead of memory
/// (softmax: row maxima, exponentials and sums of one block of rows stay in
/// L1/L2, and the input is read from memory once). Every kernel in a group
/// touches only rows [b, e) of the values the group produces when given
/// [b, e) scaled by its `scale` (its parallel range is rows * scale), and
/// some kernel of the group reads what another wrote (else nothing is gained).
struct RowGroup {
  size_t first_step = 0, end_step = 0;  // steps [first_step, end_step): kernels and views
  int64_t rows = 0;                     // the leading extent every value in the group shares
  std::vector<int64_t> scale;           // per step of the group; 0 for views
  // In a symbolic graph, `rows` and `scale` are at the hints: a call takes
  // its rows from this polynomial and each scale from its kernel's range.
  ir::DimExpr row_count;
};

struct Plan {
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<RowGroup> row_groups;  // in step order, disjoint
  std::vector<char> materialized;    // by node id
  /// Primitives that run their reference kernel: the native backend has no lowering for them.
  std::vector<ir::Primitive> reference_primitives;
};

/// Complex numbers are not lowered to native code: a node that computes or
/// reads c64 or c128 values is its own step, which calls the primitive's
/// reference kernel (as a library call), so eager, interpreted and compiled
/// results are the same bits. Movement steps that only view memory stay views.
bool touches_complex(const ir::Graph& graph, const ir::Node& node);
/// An elementwise node computed inside the loop of the kernel that reads it.
bool is_fusible_elementwise(const ir::Graph& graph, const ir::Node& node);
/// The space an elementwise or reduce kernel's code indexes: its root's
/// shape, or a reduction's input shape.
const Shape& kernel_space(const ir::Graph& graph, const Kernel& kernel);
/// The node whose shape is the kernel's space.
const ir::Node& kernel_space_node(const ir::Graph& graph, const Kernel& kernel);
/// Whether two nodes have the same shape at every size of the graph's symbols.
bool same_shape(const ir::Graph& graph, const ir::Node& a, const ir::Node& b);
/// Whether every value the kernel reads sits at the flat index of its space:
/// the leaves are the space's shape or single values, and no iota needs the
/// index split into axes.
bool reads_at_flat_index(const ir::Graph& graph, const Kernel& kernel);
/// A reduction to one value (a loss, a norm) has a single output element, so
/// splitting its outputs across threads leaves one thread reading the whole
/// input: 2.3 ms for the sum of f32[4096,4096] here, where two threads read it
/// in 1.2. Such a reduction over this many elements, reading at its input's
/// flat index, runs in slices instead; below, one thread reads it in less time
/// than waking others takes.
inline constexpr int64_t chunked_reduction_minimum = int64_t{1} << 16;

/// Whether a reduction of an input of `shape` over `axes` (ascending) adds
/// whole rows into the output (one contiguous, non-innermost run of axes
/// with enough inner elements), provided its kernel reads at the flat index.
bool accumulates_rows(const Shape& shape, const std::vector<size_t>& axes, DType dtype);
/// Whether the graph's compiled results equal running it op by op, as eager
/// code does, bit for bit as far as its reductions go: a floating sum or
/// product fused with producers that stop it from accumulating rows adds in
/// another order than the same reduction of a materialized input; and loop
/// bodies compiled whole never split a reduction across threads.
bool reductions_match_op_by_op(const ir::Graph& graph, bool in_loop_body = false);
/// An elementwise kernel that reads at its flat index: it loops over flat
/// element indices, so its code does not depend on the shape.
bool is_flat(const ir::Graph& graph, const Kernel& kernel);
/// A reduction node that roots a fused reduce kernel.
bool is_fusible_reduction(const ir::Graph& graph, const ir::Node& node);
/// Roughly how many vector operations one element of `op` costs in a fused
/// loop: tens for the transcendental functions (exp, tanh, ...), else 1.
int operation_cost(ir::Primitive op);

/// The values a step reads when it runs; a constant step reads none (it is
/// folded when the graph compiles).
std::vector<ir::ValueId> step_inputs(const ir::Graph& graph, const Plan& plan, const Step& step);

/// The parallel range of an elementwise or reduce kernel's code (what a
/// thread pool splits): elements for flat kernels, rows of the last axis for
/// other elementwise kernels, output elements for reductions, input elements
/// for chunked ones. Codegen and row groups both take it from here.
int64_t kernel_range(const ir::Graph& graph, const Kernel& kernel);
/// kernel_range as a polynomial in the graph's symbols.
ir::DimExpr kernel_range_size(const ir::Graph& graph, const Kernel& kernel);

/// Every plan step as the runtime sees it: what it reads and defines, and for
/// a view, whose memory it shares.
std::vector<runtime::ProgramStep> program_steps(const ir::Graph& graph, const Plan& plan);

/// Finds the row groups of a plan whose steps are final.
std::vector<RowGroup> find_row_groups(const ir::Graph& graph, const Plan& plan);

/// Plans `graph` (verified, dead nodes removed).
Plan plan_graph(const ir::Graph& graph);

/// The values of the plan's constant steps, by node id (empty elsewhere),
/// evaluated once with the reference kernels.
std::vector<Array> fold_constants(const ir::Graph& graph, const Plan& plan);

/// A readable listing of the plan, for KILN_DUMP.
std::string describe(const ir::Graph& graph, const Plan& plan);
/// A digest of that listing: saved code records it, so that a later build
/// planning the graph differently never runs it.
uint64_t plan_digest(const ir::Graph& graph, const Plan& plan);

}  // namespace kiln::llvm_backend
