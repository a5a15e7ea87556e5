// kiln::jit: trace a function once per signature, compile its graph once per
// process, and explain every compile.
//
//   auto step = kiln::jit(train_step, {.name = "step", .donate_argnums = {0}});
//   auto [params, loss] = step(params, batch);
//   step.stats().compiles; step.last_miss_explanation();
//
// Array leaves of the arguments are dynamic (their dtype, shape and weak flag
// are part of the key); every other leaf (numbers, strings, enums) is static
// (its value is part of the key). A number passed where a non-generic
// function's parameter is an Array becomes a dynamic, weakly typed scalar.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/graph.h"
#include "kiln/tree.h"

namespace kiln {

/// How a callable with state (captures) is cached.
enum class Captures {
  Auto,     // captureless: by signature; stateful: re-traced every call, looked up by graph
  Retrace,  // always re-trace, even captureless callables
  Constant  // by signature even with state: captures are frozen at trace time
};

/// When a new graph's optimized code is compiled.
enum class CompileMode {
  Auto,        // as KILN_COMPILE says: background (the default) or sync
  Background,  // on kiln's compile thread; calls run the graph op by op until it is ready
  Sync         // on the calling thread: the first call waits for it
};

/// What a recompilation storm does.
enum class OnStorm { Warn, Error, Generalize };

/// An array leaf's dimension compiled shape-generic: one executable serves
/// every size of it in [min, max]. Leaves count the array leaves of all
/// arguments, in order, from 0. Where the function is valid for a known range
/// of sizes (a sequence no longer than a positional table), the bounds say so:
/// probing traces the function inside them only, and a size outside them
/// compiles on its own. (torch._dynamo.mark_dynamic(min=, max=) is the same.)
struct DynamicDim {
  int leaf = 0;
  int dim = 0;
  int64_t min = 2;  // sizes 0 and 1 always compile on their own (broadcasting treats them differently)
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct JitOptions {
  std::string name;                 // default: the call site, file:line
  std::vector<int> donate_argnums;  // arguments whose arrays the call consumes
  Captures captures = Captures::Auto;
  int verify_every = 0;  // with Constant: re-trace every N-th hit, warn on a stale capture
  int recompile_limit = 8;
  OnStorm on_storm = OnStorm::Warn;
  // Dimensions compiled shape-generic: {{leaf, dim}} for every size >= 2,
  // {{leaf, dim, min, max}} for sizes in [min, max].
  std::vector<DynamicDim> dynamic_dims;
  // A dimension whose size alone changed between two calls is compiled
  // dynamic on the second compile (and explained); false compiles each size.
  bool automatic_dynamic = true;
  std::string device = "cpu";
  CompileMode compile_mode = CompileMode::Auto;
};

struct CacheStats {
  int64_t calls = 0;
  int64_t hits = 0;    // calls served by an executable this function already had
  int64_t misses = 0;  // calls that needed an executable this function did not have
  int64_t traces = 0;
  int64_t compiles = 0;         // executables actually compiled (not found in the process-wide cache)
  int64_t persistent_hits = 0;  // executables loaded from the persistent cache instead of compiled
  double compile_seconds = 0;
  double trace_seconds = 0;
  double load_seconds = 0;           // spent loading persistent hits
  double saved_compile_seconds = 0;  // what compiling the persistent hits took when they were saved
  // Calls that ran op by op because their graph's optimized code was still
  // compiling in the background (CompileMode::Background).
  int64_t calls_before_optimized = 0;
};

struct CacheLimits {
  size_t per_function = 64;  // signature/graph entries kept per jitted function (LRU)
  size_t graphs = 1024;      // executables kept process-wide (LRU)
  // Native kernels kept process-wide (LRU) for reuse by later graphs; one
  // entry is the machine code of one loop (a fused elementwise chain, a
  // reduction, or an operation that does not fuse). An evicted kernel stays
  // valid for the executables using it; a later graph compiles it again.
  size_t kernels = 4096;
};

void set_cache_limits(CacheLimits limits);
CacheLimits cache_limits();
/// Totals over every jitted function of the process.
CacheStats global_cache_stats();
/// Drops every process-wide executable (jitted objects keep theirs).
void clear_graph_cache();
/// Blocks until every optimized compile running in the background (or queued
/// for it) has ended, ready or failed.
void wait_for_background_compiles();

namespace detail {

/// The flattened arguments of one call.
struct CallArguments {
  std::string signature;                // bytes: structure, abstract values, static values
  std::vector<Array> arrays;            // dynamic leaves, in order
  std::vector<uint32_t> shape_offsets;  // per leaf: where its shape starts in `signature`
  std::vector<char> donated;            // per leaf, when the call donates arguments
};

/// One path-named piece of a signature, for explanations.
struct SignatureToken {
  enum class Kind { array, static_value, node } kind;
  std::string path;   // e.g. `arg 1["tokens"]`
  std::string text;   // abstract value, static value or container kind
  uint64_t hash = 0;  // static values and nodes
  size_t size = 0;    // nodes
  Shape shape;        // arrays
  DType dtype = DType::f32;
  bool weak = false;
};
using SignatureDescription = std::vector<SignatureToken>;

struct TraceOutcome {
  std::vector<Array> outputs;
  std::shared_ptr<const void> skeleton;  // the traced result, rebuilt with real outputs
};

struct CallResult {
  std::vector<Array> outputs;
  std::shared_ptr<const void> skeleton;
};

class JitFunction;

/// What a traced call ran, for a front end that can later prove a call would
/// trace to the same graph (guards on everything the trace read): it runs
/// the same executable with that call's arrays, without tracing.
struct Replay {
  std::shared_ptr<const void> entry;  // the executable's entry, kept alive
  std::vector<Array> captures;        // this trace's implicit inputs, in order
  std::vector<char> constant;         // per capture: made from host data in the trace (its value is in the key)
  std::vector<Array> lifted;          // the trace's values of lifted literals
  std::shared_ptr<const void> skeleton;
};

/// The non-template part of a jitted object: caches, explanations, storms, stats.
class JitCore {
 public:
  JitCore(JitOptions options, bool stateful, Location where);
  ~JitCore();
  /// With `replay` (a stateful function's call): fills it with what the call ran.
  CallResult call(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace,
                  FunctionRef<SignatureDescription()> describe, Replay* replay = nullptr);
  /// Runs what an earlier call ran, with this call's arguments and
  /// `captures` in place of the trace's (same abstract values); a hit.
  CallResult replay(const Replay& replay, CallArguments& arguments, const std::vector<Array>& captures);
  Graph lower(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace);
  CacheStats stats() const;
  size_t cache_size() const;
  std::string last_miss_explanation() const;
  const std::string& name() const;

 private:
  std::unique_ptr<JitFunction> function_;
};

// ---- argument flattening -----------------------------------------------------------

struct SignatureBuilder {
  CallArguments& out;
  Location where;  // named by errors about an argument
  void array(const Array& a);
  void static_leaf(uint64_t hash, const std::string&);
  void key(uint64_t hash, const std::string&);
  void node(std::string_view kind, size_t size);
  void enter(const std::string&) {}
  void leave() {}
};

struct SignatureDescriber {
  SignatureDescription tokens;
  std::vector<std::string> path;
  std::string current() const;
  void array(const Array& a);
  void static_leaf(uint64_t hash, const std::string& text);
  void key(uint64_t, const std::string&) {}
  void node(std::string_view kind, size_t size);
  void enter(const std::string& segment) { path.push_back(segment); }
  void leave() { path.pop_back(); }
};

/// A dynamic weakly typed 0-d array for a number passed as an Array parameter.
Array weak_scalar(Scalar value);
/// Marks the arrays of donated arguments as consumed by `function`, jitted at
/// `where` (except those returned as outputs).
void mark_donated(const std::vector<Array>& arrays, const std::vector<Array>& outputs, const std::string& function,
                  Location where);
/// Throws kiln::Error for a donate_argnums entry that names no argument of a
/// call with `arity` arguments, or names one twice.
void check_donate_argnums(const std::vector<int>& donate_argnums, size_t arity, const std::string& function,
                          Location where);
bool tracing_active();

/// Whether a callable carries state (captures) that can change between calls.
/// Wrappers declare `static constexpr bool kiln_stateful` to forward theirs.
template <class F>
constexpr bool stateful() {
  if constexpr (requires { F::kiln_stateful; }) return F::kiln_stateful;
  else return !(std::is_empty_v<F> || std::is_function_v<std::remove_pointer_t<F>>);
}
template <class F>
inline constexpr bool stateful_v = stateful<F>();

// Parameter types of a non-generic callable, when they can be known.
template <class F, class = void>
struct ParameterTypes {
  static constexpr bool known = false;
};
template <class F>
struct ParameterTypes<F, std::void_t<decltype(&F::operator())>> : ParameterTypes<decltype(&F::operator())> {};
template <class R, class... P>
struct ParameterTypes<R (*)(P...)> {
  static constexpr bool known = true;
  using types = std::tuple<std::remove_cvref_t<P>...>;
};
template <class R, class... P>
struct ParameterTypes<R(P...)> : ParameterTypes<R (*)(P...)> {};
template <class C, class R, class... P>
struct ParameterTypes<R (C::*)(P...) const> : ParameterTypes<R (*)(P...)> {};
template <class C, class R, class... P>
struct ParameterTypes<R (C::*)(P...)> : ParameterTypes<R (*)(P...)> {};

/// The value passed for parameter I: a number meant for an Array parameter
/// becomes a weak dynamic scalar; everything else passes through.
template <class F, size_t I, class A>
decltype(auto) adapt_argument(const A& argument) {
  if constexpr (ParameterTypes<F>::known && Number<A>) {
    using Types = typename ParameterTypes<F>::types;
    if constexpr (I < std::tuple_size_v<Types> && std::is_same_v<std::tuple_element_t<I, Types>, Array>) {
      return weak_scalar(Scalar(argument));
    } else {
      return (argument);
    }
  } else {
    return (argument);
  }
}

}  // namespace detail

/// A jitted callable. Copies share one cache.
template <class F>
class Jitted {
 public:
  Jitted(F fn, JitOptions options, Location where)
      : fn_(std::make_shared<F>(std::move(fn))),
        core_(std::make_shared<detail::JitCore>(std::move(options), is_stateful(), where)),
        where_(where) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return call(std::index_sequence_for<Args...>(), args...);
  }

  CacheStats stats() const { return core_->stats(); }
  size_t cache_size() const { return core_->cache_size(); }
  std::string last_miss_explanation() const { return core_->last_miss_explanation(); }
  const std::string& name() const { return core_->name(); }

  /// The graph `fn` traces to for these arguments (nothing is compiled or run).
  template <class... Args>
  Graph lower(const Args&... args) const {
    return lower_adapted(std::index_sequence_for<Args...>(), args...);
  }

 private:
  static constexpr bool is_stateful() { return detail::stateful_v<F>; }

 public:
  static constexpr bool kiln_stateful = detail::stateful_v<F>;

 private:
  template <size_t... I, class... Args>
  Graph lower_adapted(std::index_sequence<I...>, const Args&... args) const {
    return lower_impl(detail::adapt_argument<F, I>(args)...);
  }

  template <class... Args>
  detail::CallArguments flatten(const Args&... args) const {
    detail::CallArguments arguments;
    // One array of rank 0 or 1 fits the string's own storage: reserving would allocate.
    if constexpr (sizeof...(Args) > 1) arguments.signature.reserve(16 + 24 * sizeof...(Args));
    arguments.arrays.reserve(2 * sizeof...(Args));
    // A call has no location of its own (a default argument cannot follow the
    // arguments); errors about them name the jitted function's line.
    detail::SignatureBuilder builder{arguments, where_};
    ((arguments.signature.push_back('P'), TreeTraits<Args>::visit(args, builder)), ...);
    return arguments;
  }

  template <class... Args>
  auto make_trace(const Args&... args) const {
    return [this, &args...](detail::TraceSession& session) {
      auto traced = detail::trace_arguments(session, *fn_, args...);
      auto result = std::make_shared<decltype(traced)>(std::move(traced));
      detail::TraceOutcome outcome;
      // Empty arrays in the result (e.g. gradient slots not asked for) are
      // not outputs; they come back empty.
      for (Array& leaf : tree_leaves(*result))
        if (leaf.defined()) outcome.outputs.push_back(std::move(leaf));
      outcome.skeleton = std::move(result);
      return outcome;
    };
  }

  template <class... Args>
  Graph lower_impl(const Args&... args) const {
    detail::CallArguments arguments = flatten(args...);
    auto trace = make_trace(args...);
    return core_->lower(arguments, trace);
  }

  template <size_t... I, class... Args>
  auto call(std::index_sequence<I...>, const Args&... unadapted) const {
    return call_adapted(detail::adapt_argument<F, I>(unadapted)...);
  }

  template <class... Args>
  auto call_adapted(const Args&... args) const {
    using Result = std::remove_cvref_t<std::invoke_result_t<F&, const Args&...>>;
    // Inside another trace (jit under grad, nested jit) the function is inlined.
    if (detail::tracing_active()) return Result((*fn_)(args...));
    if (!donated_.empty()) detail::check_donate_argnums(donated_, sizeof...(Args), name(), where_);
    detail::CallArguments arguments = flatten(args...);
    if (!donated_.empty()) arguments.donated = donated_leaves(args...);
    auto trace = make_trace(args...);
    auto describe = [&] {
      detail::SignatureDescriber describer;
      size_t index = 0;
      ((describer.enter("arg " + std::to_string(index++)), TreeTraits<Args>::visit(args, describer), describer.leave()),
       ...);
      return std::move(describer.tokens);
    };
    detail::CallResult result = core_->call(arguments, trace, describe);
    if (!donated_.empty()) donate(result.outputs, args...);
    const auto& skeleton = *static_cast<const Result*>(result.skeleton.get());
    size_t next = 0;
    auto fill = [&](const Array& leaf) { return leaf.defined() ? result.outputs[next++] : Array(); };
    return TreeTraits<Result>::map_arrays(skeleton, fill);
  }

  template <class... Args>
  std::vector<char> donated_leaves(const Args&... args) const {
    std::vector<char> mask;
    int index = 0;
    ((mask.insert(mask.end(), tree_leaves(args).size(),
                  std::find(donated_.begin(), donated_.end(), index) != donated_.end()),
      ++index),
     ...);
    return mask;
  }

  template <class... Args>
  void donate(const std::vector<Array>& outputs, const Args&... args) const {
    std::vector<Array> consumed;
    int index = 0;
    ((std::find(donated_.begin(), donated_.end(), index++) != donated_.end()
          ? (void)[&] {
              for (Array& leaf : tree_leaves(args)) consumed.push_back(std::move(leaf));
            }()
          : (void)0),
     ...);
    detail::mark_donated(consumed, outputs, core_->name(), where_);
  }

  std::shared_ptr<F> fn_;
  std::shared_ptr<detail::JitCore> core_;
  Location where_;
  std::vector<int> donated_;

  template <class G>
  friend Jitted<G> jit(G fn, JitOptions options, Location where);
};

/// Wraps `fn` so calls trace once per signature and run compiled code.
template <class F>
Jitted<F> jit(F fn, JitOptions options = {}, Location where = Location::current()) {
  std::vector<int> donated = options.donate_argnums;
  Jitted<F> jitted(std::move(fn), std::move(options), where);
  jitted.donated_ = std::move(donated);
  return jitted;
}

}  // namespace kiln
