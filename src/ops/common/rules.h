// The record of each primitive: every rule it provides, gathered in one table
// row indexed by Primitive — shape/dtype rule, reference kernel, printing,
// derivatives, fusion kind, cost and native lowering. Each family file under
// src/ops/ fills the rows of its primitives; rule_problems() (and the
// registry test) refuses a row that lacks a rule without a stated waiver.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/common/lowering.h"

namespace kiln::ops {

using detail::AbstractValue;
using ir::Node;
using ir::Primitive;

/// How the native backend schedules a primitive.
enum class Fusion : uint8_t {
  unset,        // no kind given: the registry refuses the row
  input,        // a graph parameter: bound at each call, never computed
  elementwise,  // computed inside the loop of the kernel that reads it (row.lower)
  reduction,    // the root of a reduction kernel, fused with its elementwise producers (row.reduction)
  view,         // the same memory seen with another shape
  matmul,       // a BLAS call for floating operands, a native kernel for integers
  kernel,       // a native kernel of its own (row.kernel; backend/llvm/standalone_*.cpp)
  control,      // a loop or branch over sub-graphs (ops/control/control.h), or one of its results:
                // every executor runs it with its own code for the bodies
  collective,   // communication between processes: every executor calls its kernel (MPI)
                // where it stands, never folds, hoists or fuses it
};

struct PrimitiveRules {
  /// The result's type from the inputs' types and the node's attributes.
  /// Throws kiln::Error (naming node.where) for inputs the primitive rejects.
  AbstractValue (*infer)(const Node& node, std::span<const AbstractValue* const> inputs) = nullptr;
  /// Reference kernel: the result from concrete inputs. Simple and obviously
  /// correct; eager execution and the interpreter both run it.
  Array (*evaluate)(const Node& node, std::span<const Array> inputs) = nullptr;
  /// Attribute text for printed IR ("axes=[0,1]"); null prints nothing.
  std::string (*describe)(const Node& node) = nullptr;

  // Derivative rules, written with the public ops so the derivative graph
  // traces, compiles and differentiates again like user code. The autodiff
  // passes run each rule under a LocationScope of the node, so every
  // operation a rule records names the user's line without passing it.
  // Only floating inputs and outputs carry derivatives.

  /// Reverse mode: one cotangent per input given the output's cotangent; an
  /// empty Array for an input that gets none (integers, indices, zero).
  std::vector<Array> (*vjp)(const Node& node, std::span<const Array> inputs, const Array& output,
                            const Array& cotangent) = nullptr;
  /// Forward mode: the output's tangent given one tangent per input (an
  /// empty Array stands for zero; at least one is non-empty).
  Array (*jvp)(const Node& node, std::span<const Array> inputs, const Array& output,
               std::span<const Array> tangents) = nullptr;
  /// Set instead of vjp/jvp when the primitive has no derivative, with why
  /// (e.g. "bool result", "piecewise constant: zero almost everywhere").
  const char* no_derivative = nullptr;

  /// Batching (vmap): the primitive applied to every lane of a batch of
  /// `size` lanes at once. An input comes with its batch axis first where
  /// `batched[k]` is set (at least one is), and as the primitive saw it
  /// otherwise; the result has its batch axis first. Written with the public
  /// ops like the derivative rules, run under a LocationScope of the node, and
  /// careful not to materialize an unbatched operand for every lane when the
  /// operation can read it once (a matmul by an unbatched matrix is one
  /// matmul).
  Array (*batch)(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                 int64_t size) = nullptr;
  /// Set instead of batch for primitives that read no operand (inputs,
  /// literals, iota, rank): their value is the same in every lane, with why.
  const char* never_batched = nullptr;

  Fusion fusion = Fusion::unset;
  /// Roughly how many vector operations one element costs in a fused loop:
  /// tens for the transcendental functions, else 1. Decides whether a value
  /// read by several kernels is recomputed or stored.
  int cost = 1;
  /// Elementwise primitives: the code of one element.
  ScalarLowering lower = nullptr;
  /// Reductions: how elements combine.
  Reduction reduction = Reduction::none;
  /// Kernels of their own (and matmul on integers, which BLAS does not do).
  NativeKernel kernel = NativeKernel::none;
  /// Set when the native backend has no code for the primitive (it then runs
  /// the reference kernel), with why.
  const char* no_native_lowering = nullptr;
};

/// Whether the native code of `row` on `dtype` values can round differently
/// from its reference kernel: kiln's vector math (exp, log, tanh, pow, ...:
/// cost above 1) against libm, and floating sums and products, which the
/// native code adds in several partial sums. Eager operations compile those at
/// every size, and constant folding leaves them to the kernels, so a result
/// never depends on the size of an array or on jit.
inline bool native_differs_from_reference(const PrimitiveRules& row, DType dtype) {
  if (!is_floating(dtype)) return false;
  // Fused kernels keep f16 and bf16 intermediates in f32, unrounded.
  if (is_half(dtype) && row.fusion == Fusion::elementwise) return true;
  if (row.fusion == Fusion::elementwise) return row.cost > 1;
  return row.fusion == Fusion::reduction && (row.reduction == Reduction::sum || row.reduction == Reduction::product);
}

/// What a row lacks: one line per missing rule ("no vjp rule and no
/// waiver"), empty when complete. The registry test runs it on every row.
std::vector<std::string> rule_problems(const PrimitiveRules& row);

using RuleTable = std::array<PrimitiveRules, ir::primitive_count>;

/// Fills the rows of `family`'s primitives (as primitives.def lists them),
/// each from `row`, a generic lambda []<Primitive op>() -> PrimitiveRules:
/// a family whose rows are one template instantiates it for its own
/// primitives only.
template <ir::Family family, class Row>
void register_family(RuleTable& table, Row row) {
#define KILN_PRIMITIVE(name, member_of)          \
  if constexpr (ir::Family::member_of == family) \
    table[static_cast<size_t>(Primitive::name)] = row.template operator()<Primitive::name>();
#include "ir/primitives.def"
}

const PrimitiveRules& rules(Primitive op);

// One per family; the registry calls each once.
void register_leaf_rules(RuleTable& table);
void register_creation_rules(RuleTable& table);
void register_random_rules(RuleTable& table);
void register_unary_rules(RuleTable& table);
void register_binary_rules(RuleTable& table);
void register_bitwise_rules(RuleTable& table);
void register_movement_rules(RuleTable& table);
void register_reduce_rules(RuleTable& table);
void register_matmul_rules(RuleTable& table);
void register_indexing_rules(RuleTable& table);
void register_gather_scatter_rules(RuleTable& table);  // the indexing family's general gather and scatter
void register_control_rules(RuleTable& table);
void register_collective_rules(RuleTable& table);
void register_sort_rules(RuleTable& table);
void register_cumulative_rules(RuleTable& table);
void register_linalg_rules(RuleTable& table);
void register_fft_rules(RuleTable& table);

/// "[0,1,2]"
std::string ints_string(const std::vector<int64_t>& values);

}  // namespace kiln::ops
