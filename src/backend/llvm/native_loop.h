// A while_loop or scan with a small body compiled into one native function:
// the loop itself, its condition and body kernels inlined into it, every
// value of an iteration in one block of memory allocated once per run. The
// general path (ops::run_control over the bodies' executables) costs about
// half a microsecond of bookkeeping per iteration — allocation, liveness,
// a call per kernel — which dwarfs a body of a few dozen elements; here an
// iteration costs what its arithmetic costs, and LLVM keeps small carries in
// registers across iterations.
//
// Eligible: every step of the bodies is a fused or standalone kernel (not a
// chunked reduction), a view or a folded constant, and an iteration touches
// few enough elements that one thread does best. Anything else (a matmul, a
// reference kernel, a nested loop, sizes that depend on a symbolic graph's
// symbols) runs through the general path.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/llvm/object_code.h"
#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::llvm_backend {

class NativeLoop {
 public:
  /// The loop of `node` compiled, or null when it is not eligible.
  /// `dump_prefix` (optional) receives the optimized IR and assembly.
  static std::unique_ptr<const NativeLoop> compile(const ir::Node& node, const std::string& dump_prefix);

  /// The loop of `node` from the object `compile` produced for it (in this
  /// or an earlier process): laid out again, linked, never optimized or
  /// code-generated. Null when the node does not lay out as the object expects.
  static std::unique_ptr<const NativeLoop> load(const ir::Node& node, const std::shared_ptr<const ObjectCode>& object);
  const std::shared_ptr<const ObjectCode>& object() const;

  /// Every result of the node (ir::control_result_types) from its operands.
  std::vector<Array> run(std::span<const Array> operands) const;

  struct Layout;
  explicit NativeLoop(std::unique_ptr<Layout> layout);
  ~NativeLoop();

 private:
  std::unique_ptr<Layout> layout_;
};

}  // namespace kiln::llvm_backend
