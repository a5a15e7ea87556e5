// The single entry point every operation goes through: record a node when a
// trace is active, otherwise run the primitive's reference kernel now.
#pragma once

#include <functional>
#include <initializer_list>
#include <span>

#include "core/location_scope.h"
#include "ir/graph.h"
#include "kiln/jit.h"

namespace kiln::detail {

Array apply(ir::Primitive op, std::span<const Array> inputs, ir::Attributes attrs, Location where);
inline Array apply(ir::Primitive op, std::initializer_list<Array> inputs, ir::Attributes attrs, Location where) {
  return apply(op, std::span<const Array>(inputs.begin(), inputs.size()), std::move(attrs), where);
}
/// The same for one or two inputs, without copying the handles.
Array apply(ir::Primitive op, const Array& a, ir::Attributes attrs, Location where);
Array apply(ir::Primitive op, const Array& a, const Array& b, ir::Attributes attrs, Location where);

/// A 0-d array holding a C++ number: a literal node while tracing (it keeps
/// `where`), a concrete array otherwise. The value is rounded to `dtype`.
Array literal(Scalar value, DType dtype, bool weak, Location where);

/// Eager operations on large arrays run compiled kernels (faster than the
/// reference kernels, and fused where an operation is a small graph) once a
/// compiler is installed. The compiler lives in the cache layer, above this
/// one, which installs it before main in every program linked with kiln (see
/// cache/eager.cpp); until then, and with
/// KILN_BACKEND=interp, eager operations run their reference kernels.
/// A compiled eager operation, run later on the inputs it was prepared for,
/// and the type of its result.
struct CompiledEager {
  std::function<Array(std::span<const Array>)> run;
  AbstractValue type;
};

struct EagerCompiler {
  /// Whether an operation producing or reading `elements` values is worth a
  /// trace and a cache lookup. `native_rounding`: the operation's native code
  /// rounds differently from its reference kernel (ops::native_differs_from_reference);
  /// eager results must not depend on the size or on jit, so such an
  /// operation is compiled at every size.
  bool (*wants)(int64_t elements, bool native_rounding) = nullptr;
  /// Traces `build` on placeholders for `inputs` and runs the compiled graph.
  /// With `compile` false, runs it only if it is compiled already (in
  /// memory or in the persistent cache) and returns an empty Array if not.
  /// `donated[k]` lets the result take over input k's memory (as a jitted
  /// function's donated argument: runtime::Executable::run).
  Array (*run)(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build, bool compile,
               std::span<const char> donated) = nullptr;
  /// Traces and compiles as `run` does, on this thread, and returns what
  /// runs the compiled graph: work queued for the dispatch thread.
  CompiledEager (*prepare)(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build) = nullptr;
};
void install_eager_compiler(const EagerCompiler* compiler);
/// The installed compiler if it wants an eager operation over `elements`
/// values, else null.
const EagerCompiler* eager_compiler_for(int64_t elements, bool native_rounding = false);

/// An eager operation through `compiler`: with queues on, compiled here and
/// run on the dispatch thread (its result pending meanwhile), else run now.
/// `operation`, its result's `type` and `where` name it in a refused allocation.
Array run_compiled_eager(const EagerCompiler& compiler, std::span<const Array> inputs,
                         FunctionRef<Array(std::span<const Array>)> build, const char* operation,
                         const AbstractValue& type, Location where);

/// What apply computes eagerly, run now on this thread by eager's compiled
/// code, if eager code runs the operation compiled; else an empty Array.
/// `compile`: the operation rounds otherwise than its reference kernel, and
/// is compiled if need be, at any size; without it, an operation whose code
/// is not compiled already gives an empty Array too (the caller runs the
/// reference kernel, which rounds alike, without a compile). `donated[k]`:
/// the result may take over input k's memory, which no one reads afterwards.
Array apply_compiled(ir::Primitive op, std::span<const Array> inputs, const ir::Attributes& attrs, Location where,
                     bool compile, std::span<const char> donated);

/// Rounds a number to what `dtype` can hold (f32 rounding, integer truncation).
Scalar scalar_as(Scalar value, DType dtype);

}  // namespace kiln::detail
