// Native loops (see the header). Every value of the bodies gets a place: a
// slot of the arena (carries, what kernels write, staged carries), a pointer
// the run passes in a table (captured operands, folded constants, scanned
// operands and stacked results), or a row of a scanned operand. The arena's
// slots sit at constant offsets from one base, so LLVM sees that they never
// overlap and keeps small carries in registers instead of storing them.
#include "backend/llvm/native_loop.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "backend/llvm/codegen.h"
#include "backend/llvm/engine.h"
#include "backend/llvm/kernel_emitter.h"
#include "backend/llvm/loops.h"
#include "backend/llvm/plan.h"
#include "core/array_impl.h"
#include "core/error_format.h"
#include "ir/control.h"
#include "runtime/compile_profile.h"
#include "telemetry/telemetry.h"
#include "transform/simplify.h"

namespace kiln::llvm_backend {

using detail::AbstractValue;

namespace {

// Beyond this many elements computed or copied per iteration, the general
// path's threads and per-kernel scheduling are worth their bookkeeping (and
// it swaps carries instead of copying them).
constexpr int64_t max_elements_per_iteration = int64_t{1} << 16;
constexpr size_t slot_alignment = 64;

// Where a value of a body lives while the loop runs.
struct Location {
  enum class Kind { none, arena, table, row } kind = Kind::none;
  size_t offset = 0;     // arena: bytes from its base
  size_t slot = 0;       // table, row: the pointer's index in the table
  size_t row_bytes = 0;  // row: the bytes of one row of the scanned operand
  bool written = false;  // arena: a kernel of the body writes it (it is no carry)
};

// What the run puts in a slot of the pointer table (slot 0 is the arena).
struct TableEntry {
  enum class Kind { operand, constant, result } kind = Kind::operand;
  size_t index = 0;  // operand, result
  Array constant;
};

struct Body {
  std::shared_ptr<ir::Graph> graph;  // simplified
  Plan plan;
  std::vector<Location> locations;  // by node id
  std::vector<ir::ValueId> origin;  // by node id: the value whose memory it is (a view's source)
  std::vector<size_t> staging;      // by carry: an arena slot, or npos when not staged
  static constexpr size_t npos = ~size_t{0};
};

}  // namespace

struct NativeLoop::Layout {
  ir::Primitive op = ir::Primitive::while_loop;
  size_t carries = 0;
  std::vector<AbstractValue> result_types;
  std::vector<size_t> carry_offsets;
  size_t arena_bytes = 0;
  std::vector<TableEntry> table;  // slots 1, 2, ...
  void (*function)(char** table) = nullptr;
  std::shared_ptr<const void> code;
  std::shared_ptr<const ObjectCode> object;
};

namespace {

// Decides every value's place, or fails when a body holds a step the loop
// cannot run itself.
class LayoutBuilder {
 public:
  LayoutBuilder(const ir::Node& node, NativeLoop::Layout& layout) : node_(node), layout_(layout) {}

  std::optional<std::vector<Body>> build() {
    layout_.op = node_.op;
    layout_.result_types = ir::control_result_types(node_);
    size_t leading = ir::leading_operand_count(node_);
    layout_.carries = node_.op == ir::Primitive::scan ? ir::scan_carry_count(node_) : leading;
    for (size_t k = 0; k < layout_.carries; ++k)
      layout_.carry_offsets.push_back(reserve(layout_.result_types[k].bytes()));
    for (size_t k = layout_.carries; k < leading; ++k) xs_slots_.push_back(add({TableEntry::Kind::operand, k}));
    for (size_t k = layout_.carries; k < layout_.result_types.size(); ++k)
      ys_slots_.push_back(add({TableEntry::Kind::result, k}));
    std::vector<Body> bodies;
    for (size_t b = 0; b < node_.bodies.size(); ++b) {
      std::optional<Body> body = place(b);
      if (!body) return std::nullopt;
      bodies.push_back(std::move(*body));
    }
    if (elements_ > max_elements_per_iteration) return std::nullopt;
    layout_.arena_bytes = arena_bytes_;
    return bodies;
  }

  const std::vector<size_t>& ys_slots() const { return ys_slots_; }

 private:
  // The body whose results are the next carries: a scan's, a while loop's second.
  bool updates_carries(size_t b) const { return node_.op == ir::Primitive::scan || b == 1; }

  size_t reserve(size_t bytes) {
    size_t offset = arena_bytes_;
    arena_bytes_ += (bytes + slot_alignment - 1) / slot_alignment * slot_alignment;
    return offset;
  }
  size_t add(TableEntry entry) {
    layout_.table.push_back(std::move(entry));
    return layout_.table.size();
  }

  std::optional<Body> place(size_t b) {
    Body body;
    auto graph = std::make_shared<ir::Graph>(*node_.bodies[b]);
    transform::simplify(*graph);
    body.graph = graph;
    body.plan = plan_graph(*graph);
    std::vector<Location>& at = body.locations;
    at.assign(graph->nodes.size(), {});
    bool scan = node_.op == ir::Primitive::scan;
    for (size_t k = 0; k < graph->arguments.size(); ++k) {
      auto id = static_cast<size_t>(graph->arguments[k]);
      if (k < layout_.carries) at[id] = {.kind = Location::Kind::arena, .offset = layout_.carry_offsets[k]};
      if (scan && k >= layout_.carries)
        at[id] = {.kind = Location::Kind::row,
                  .slot = xs_slots_[k - layout_.carries],
                  .row_bytes = graph->nodes[id].type.bytes()};
    }
    size_t first_capture = ir::body_capture_begin(node_, b);
    for (size_t k = 0; k < graph->captures.size(); ++k)
      at[static_cast<size_t>(graph->captures[k])] = {.kind = Location::Kind::table,
                                                     .slot = add({TableEntry::Kind::operand, first_capture + k})};
    std::vector<Array> constants = fold_constants(*graph, body.plan);
    body.origin.resize(graph->nodes.size());
    for (size_t id = 0; id < graph->nodes.size(); ++id) body.origin[id] = static_cast<ir::ValueId>(id);
    for (const Step& step : body.plan.steps)
      if (step.kind == Step::Kind::view)
        body.origin[static_cast<size_t>(step.value)] =
            body.origin[static_cast<size_t>(graph->nodes[static_cast<size_t>(step.value)].inputs[0])];
    for (const Step& step : body.plan.steps) {
      auto id = static_cast<size_t>(step.value);
      switch (step.kind) {
        case Step::Kind::kernel: {
          const Kernel& kernel = body.plan.kernels[static_cast<size_t>(step.kernel)];
          if (kernel.chunked) return std::nullopt;
          elements_ += shape_size(kernel_space(*graph, kernel));
          std::vector<ir::ValueId> written{kernel.root};
          written.insert(written.end(), kernel.extra_roots.begin(), kernel.extra_roots.end());
          for (ir::ValueId value : written) {
            const AbstractValue& type = graph->nodes[static_cast<size_t>(value)].type;
            std::optional<size_t> carry = carry_written_in_place(body, b, value);
            size_t offset = carry ? layout_.carry_offsets[*carry] : reserve(type.bytes());
            at[static_cast<size_t>(value)] = {.kind = Location::Kind::arena, .offset = offset, .written = true};
          }
          break;
        }
        case Step::Kind::view: at[id] = at[static_cast<size_t>(graph->nodes[id].inputs[0])]; break;
        case Step::Kind::constant:
          at[id] = {.kind = Location::Kind::table, .slot = add({TableEntry::Kind::constant, 0, constants[id]})};
          break;
        default: return std::nullopt;
      }
    }
    for (ir::ValueId output : graph->outputs)
      if (at[static_cast<size_t>(output)].kind == Location::Kind::none) return std::nullopt;
    // A carry's new value is staged first unless a kernel wrote it: it may be
    // another carry's old value (a loop swapping two carries).
    body.staging.assign(layout_.carries, Body::npos);
    for (size_t k = 0; updates_carries(b) && k < layout_.carries; ++k) {
      const Location& place = at[static_cast<size_t>(graph->outputs[k])];
      bool unchanged = place.kind == Location::Kind::arena && place.offset == layout_.carry_offsets[k];
      if (unchanged) continue;
      const AbstractValue& type = layout_.result_types[k];
      if (!place.written) body.staging[k] = reserve(type.bytes());
      elements_ += type.size() * (place.written ? 1 : 2);  // copied once, or staged and copied
    }
    for (size_t k = layout_.carries; updates_carries(b) && k < graph->outputs.size(); ++k)
      elements_ += graph->nodes[static_cast<size_t>(graph->outputs[k])].type.size();  // a stacked row
    return body;
  }

  // The carry whose new value `value` is, when the kernel writing it may
  // write over the carry's old value: no later kernel and no other result
  // reads the old value, and the writing kernel itself reads it, if at all,
  // only at the index it writes (a flat elementwise kernel computes every
  // output of an element before storing any). The carry then needs no copy,
  // and a carry of a few vectors stays in registers across iterations.
  std::optional<size_t> carry_written_in_place(const Body& body, size_t b, ir::ValueId value) const {
    if (!updates_carries(b)) return std::nullopt;
    const ir::Graph& graph = *body.graph;
    const std::vector<ir::ValueId>& origin = body.origin;
    std::optional<size_t> carry;
    for (size_t k = 0; k < layout_.carries; ++k)
      if (graph.outputs[k] == value) carry = k;
    if (!carry) return std::nullopt;
    ir::ValueId old_value = graph.arguments[*carry];
    for (size_t k = 0; k < graph.outputs.size(); ++k)
      if (origin[static_cast<size_t>(graph.outputs[k])] == old_value) return std::nullopt;
    bool after_writer = false;
    for (const Step& step : body.plan.steps) {
      if (step.kind != Step::Kind::kernel) continue;
      const Kernel& kernel = body.plan.kernels[static_cast<size_t>(step.kernel)];
      bool writer = kernel.root == value ||
                    std::find(kernel.extra_roots.begin(), kernel.extra_roots.end(), value) != kernel.extra_roots.end();
      bool reads_old = false;
      for (ir::ValueId leaf : kernel.leaves) reads_old = reads_old || origin[static_cast<size_t>(leaf)] == old_value;
      if (reads_old &&
          (after_writer || (writer && !(kernel.kind == Kernel::Kind::elementwise && is_flat(graph, kernel)))))
        return std::nullopt;
      after_writer = after_writer || writer;
    }
    return carry;
  }

  const ir::Node& node_;
  NativeLoop::Layout& layout_;
  size_t arena_bytes_ = 0;
  int64_t elements_ = 0;
  std::vector<size_t> xs_slots_, ys_slots_;
};

// The loop as one function, void loop(char** table), the bodies' kernels
// inlined into it.
class LoopEmitter {
 public:
  LoopEmitter(llvm::Module& module, const ir::Node& node, const NativeLoop::Layout& layout,
              const std::vector<Body>& bodies, const std::vector<size_t>& ys_slots)
      : module_(module),
        builder_(module.getContext()),
        node_(node),
        layout_(layout),
        bodies_(bodies),
        ys_slots_(ys_slots) {}

  void emit(const std::string& symbol) {
    auto* type = llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getPtrTy()}, false);
    function_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, module_);
    function_->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t b = 0; b < bodies_.size(); ++b) emit_kernels(b, symbol);
    builder_.SetInsertPoint(llvm::BasicBlock::Create(module_.getContext(), "entry", function_));
    for (size_t slot = 0; slot <= layout_.table.size(); ++slot)
      table_.push_back(builder_.CreateLoad(
          builder_.getPtrTy(), builder_.CreateConstGEP1_64(builder_.getPtrTy(), function_->getArg(0), slot)));
    if (node_.op == ir::Primitive::while_loop) {
      emit_while();
    } else {
      emit_scan();
    }
    builder_.CreateRetVoid();
  }

 private:
  struct EmittedKernel {
    llvm::Function* body = nullptr;
    llvm::Constant* constants = nullptr;
    int64_t range = 0;
  };

  void emit_kernels(size_t b, const std::string& symbol) {
    const Body& body = bodies_[b];
    kernels_.emplace_back();
    for (size_t k = 0; k < body.plan.kernels.size(); ++k) {
      std::string name = symbol + "_" + std::to_string(b) + "_" + std::to_string(k);
      KernelEmitter emitter(module_, *body.graph, body.plan.kernels[k], name);
      EmittedKernel emitted;
      emitted.range = emitter.emit().range;
      // The loop calls the kernel's body directly; the entry that unpacks a
      // table of buffers is for the thread pool, which never runs it here.
      module_.getFunction(name)->eraseFromParent();
      emitted.body = module_.getFunction(name + "_body");
      drop_noalias_where_in_place(b, body.plan.kernels[k], *emitted.body);
      std::vector<uint64_t> values = kernel_constants(*body.graph, body.plan.kernels[k]);
      if (values.empty()) values.push_back(0);
      auto* array = llvm::ConstantDataArray::get(module_.getContext(), values);
      emitted.constants = new llvm::GlobalVariable(module_, array->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                                   array, name + "_constants");
      kernels_.back().push_back(emitted);
    }
  }

  // A kernel writing a carry in place reads and writes one memory through
  // two parameters, which must then not claim to be the only way to it:
  // inlined into the loop, a noalias leaf's loads would be hoisted out of
  // the loop past the stores of the kernel itself.
  void drop_noalias_where_in_place(size_t b, const Kernel& kernel, llvm::Function& function) {
    const std::vector<Location>& at = bodies_[b].locations;
    std::vector<ir::ValueId> written{kernel.root};
    written.insert(written.end(), kernel.extra_roots.begin(), kernel.extra_roots.end());
    unsigned first_leaf = 3 + static_cast<unsigned>(written.size());
    for (size_t w = 0; w < written.size(); ++w) {
      const Location& output = at[static_cast<size_t>(written[w])];
      for (size_t k = 0; k < kernel.leaves.size(); ++k) {
        const Location& leaf = at[static_cast<size_t>(kernel.leaves[k])];
        if (leaf.kind != Location::Kind::arena || leaf.offset != output.offset) continue;
        function.removeParamAttr(3 + static_cast<unsigned>(w), llvm::Attribute::NoAlias);
        function.removeParamAttr(first_leaf + static_cast<unsigned>(k), llvm::Attribute::NoAlias);
      }
    }
  }

  llvm::Value* address(size_t b, ir::ValueId id, llvm::Value* row) {
    const Location& place = bodies_[b].locations[static_cast<size_t>(id)];
    switch (place.kind) {
      case Location::Kind::arena: return arena(place.offset);
      case Location::Kind::table: return table_[place.slot];
      case Location::Kind::row:
        return builder_.CreateGEP(builder_.getInt8Ty(), table_[place.slot],
                                  builder_.CreateMul(row, builder_.getInt64(place.row_bytes)));
      case Location::Kind::none: break;
    }
    detail::internal_error("a native loop's value without a place", __FILE__, __LINE__);
  }

  llvm::Value* arena(size_t offset) { return builder_.CreateConstGEP1_64(builder_.getInt8Ty(), table_[0], offset); }

  void copy(llvm::Value* to, llvm::Value* from, const AbstractValue& type) {
    size_t bytes = type.bytes();
    if (bytes == 0) return;
    llvm::Align alignment(dtype_size(type.dtype));
    builder_.CreateMemCpy(to, alignment, from, alignment, bytes);
  }

  void run_kernels(size_t b, llvm::Value* row) {
    const Body& body = bodies_[b];
    for (const Step& step : body.plan.steps) {
      if (step.kind != Step::Kind::kernel) continue;
      const Kernel& kernel = body.plan.kernels[static_cast<size_t>(step.kernel)];
      const EmittedKernel& emitted = kernels_[b][static_cast<size_t>(step.kernel)];
      std::vector<llvm::Value*> arguments{builder_.getInt64(0), builder_.getInt64(emitted.range), emitted.constants,
                                          address(b, kernel.root, row)};
      for (ir::ValueId extra : kernel.extra_roots) arguments.push_back(address(b, extra, row));
      for (ir::ValueId leaf : kernel.leaves) arguments.push_back(address(b, leaf, row));
      builder_.CreateCall(emitted.body, arguments);
    }
  }

  void update_carries(size_t b, llvm::Value* row) {
    const Body& body = bodies_[b];
    const std::vector<ir::ValueId>& outputs = body.graph->outputs;
    for (size_t k = 0; k < layout_.carries; ++k)
      if (body.staging[k] != Body::npos) copy(arena(body.staging[k]), address(b, outputs[k], row), type(k));
    for (size_t k = 0; k < layout_.carries; ++k) {
      const Location& place = body.locations[static_cast<size_t>(outputs[k])];
      if (place.written && place.offset != layout_.carry_offsets[k])
        copy(arena(layout_.carry_offsets[k]), address(b, outputs[k], row), type(k));
    }
    for (size_t k = 0; k < layout_.carries; ++k)
      if (body.staging[k] != Body::npos) copy(arena(layout_.carry_offsets[k]), arena(body.staging[k]), type(k));
  }

  const AbstractValue& type(size_t result) const { return layout_.result_types[result]; }

  void emit_while() {
    llvm::LLVMContext& context = module_.getContext();
    auto* header = llvm::BasicBlock::Create(context, "condition", function_);
    auto* inside = llvm::BasicBlock::Create(context, "body", function_);
    auto* after = llvm::BasicBlock::Create(context, "done", function_);
    builder_.CreateBr(header);
    builder_.SetInsertPoint(header);
    run_kernels(0, nullptr);
    ir::ValueId predicate = bodies_[0].graph->outputs[0];
    const AbstractValue& predicate_type = bodies_[0].graph->nodes[static_cast<size_t>(predicate)].type;
    llvm::Type* integer = builder_.getIntNTy(static_cast<unsigned>(8 * dtype_size(predicate_type.dtype)));
    llvm::Value* value = builder_.CreateLoad(integer, address(0, predicate, nullptr));
    builder_.CreateCondBr(builder_.CreateICmpNE(value, llvm::ConstantInt::get(integer, 0)), inside, after);
    builder_.SetInsertPoint(inside);
    run_kernels(1, nullptr);
    update_carries(1, nullptr);
    builder_.CreateBr(header);
    builder_.SetInsertPoint(after);
  }

  void emit_scan() {
    int64_t length = ir::scan_length(node_);
    bool reverse = ir::scan_reverse(node_);
    counted_loop(builder_, builder_.getInt64(0), builder_.getInt64(length), "step", [&](llvm::Value* step) {
      llvm::Value* row = reverse ? builder_.CreateSub(builder_.getInt64(length - 1), step) : step;
      run_kernels(0, row);
      const std::vector<ir::ValueId>& outputs = bodies_[0].graph->outputs;
      // Stacked results first: one may be a carry's old value.
      for (size_t k = layout_.carries; k < outputs.size(); ++k) {
        const AbstractValue& row_type = bodies_[0].graph->nodes[static_cast<size_t>(outputs[k])].type;
        llvm::Value* target = builder_.CreateGEP(builder_.getInt8Ty(), table_[ys_slots_[k - layout_.carries]],
                                                 builder_.CreateMul(row, builder_.getInt64(row_type.bytes())));
        copy(target, address(0, outputs[k], row), row_type);
      }
      update_carries(0, row);
    });
  }

  llvm::Module& module_;
  llvm::IRBuilder<> builder_;
  const ir::Node& node_;
  const NativeLoop::Layout& layout_;
  const std::vector<Body>& bodies_;
  const std::vector<size_t>& ys_slots_;
  llvm::Function* function_ = nullptr;
  std::vector<llvm::Value*> table_;
  std::vector<std::vector<EmittedKernel>> kernels_;  // by body, by kernel
};

}  // namespace

NativeLoop::NativeLoop(std::unique_ptr<Layout> layout) : layout_(std::move(layout)) {}
NativeLoop::~NativeLoop() = default;

namespace {
// A loop compiled whole lays out every value at fixed offsets, which sizes
// that depend on a symbolic graph's symbols do not allow.
bool has_symbols(const ir::Node& node) {
  if (node.symbolic) return true;
  for (const auto& body : node.bodies)
    if (body->symbols > 0) return true;
  return false;
}
}  // namespace

std::unique_ptr<const NativeLoop> NativeLoop::compile(const ir::Node& node, const std::string& dump_prefix) {
  if (node.op != ir::Primitive::while_loop && node.op != ir::Primitive::scan) return nullptr;
  if (has_symbols(node)) return nullptr;
  auto layout = std::make_unique<Layout>();
  LayoutBuilder placer(node, *layout);
  std::optional<std::vector<Body>> bodies = placer.build();
  if (!bodies) return nullptr;
  Engine& engine = Engine::instance();
  std::string symbol = engine.fresh_symbol_prefix() + "loop";
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = engine.new_module(symbol, *context);
  {
    runtime::PhaseTimer timer(runtime::CompilePhase::generate);
    LoopEmitter(*module, node, *layout, *bodies, placer.ys_slots()).emit(symbol);
  }
  Engine::Linked linked =
      engine.compile(std::move(module), std::move(context), {symbol}, dump_prefix, Engine::Pipeline::native_loop);
  size_t kernels = 0;
  for (const Body& body : *bodies) kernels += body.plan.kernels.size();
  telemetry::log(telemetry::log_compiles, std::string(ir::primitive_name(node.op)) + " at " +
                                              detail::location_string(node.where) + ": one native loop, " +
                                              std::to_string(kernels) + " kernels inlined");
  layout->function = reinterpret_cast<void (*)(char**)>(linked.addresses[0]);
  layout->code = linked.code;
  layout->object = linked.object;
  return std::make_unique<const NativeLoop>(std::move(layout));
}

std::unique_ptr<const NativeLoop> NativeLoop::load(const ir::Node& node,
                                                   const std::shared_ptr<const ObjectCode>& object) {
  if (node.op != ir::Primitive::while_loop && node.op != ir::Primitive::scan) return nullptr;
  if (has_symbols(node)) return nullptr;
  auto layout = std::make_unique<Layout>();
  LayoutBuilder placer(node, *layout);
  if (!placer.build() || object->symbols.size() != 1) return nullptr;
  Engine::Linked linked = Engine::instance().load(object);
  layout->function = reinterpret_cast<void (*)(char**)>(linked.addresses[0]);
  layout->code = linked.code;
  layout->object = linked.object;
  return std::make_unique<const NativeLoop>(std::move(layout));
}

const std::shared_ptr<const ObjectCode>& NativeLoop::object() const { return layout_->object; }

std::vector<Array> NativeLoop::run(std::span<const Array> operands) const {
  const Layout& layout = *layout_;
  detail::Buffer arena(layout.arena_bytes);
  auto* base = static_cast<char*>(arena.data());
  for (size_t k = 0; k < layout.carries; ++k)
    if (size_t bytes = layout.result_types[k].bytes())
      std::memcpy(base + layout.carry_offsets[k], detail::impl(operands[k])->data<char>(), bytes);
  std::vector<Array> results(layout.result_types.size());
  std::vector<char*> table{base};
  for (const TableEntry& entry : layout.table) {
    switch (entry.kind) {
      case TableEntry::Kind::operand: table.push_back(detail::impl(operands[entry.index])->mutable_data<char>()); break;
      case TableEntry::Kind::constant: table.push_back(detail::impl(entry.constant)->mutable_data<char>()); break;
      case TableEntry::Kind::result:
        results[entry.index] = detail::allocate(layout.result_types[entry.index]);
        table.push_back(detail::impl(results[entry.index])->mutable_data<char>());
        break;
    }
  }
  layout.function(table.data());
  for (size_t k = 0; k < layout.carries; ++k) {
    results[k] = detail::allocate(layout.result_types[k]);
    if (size_t bytes = layout.result_types[k].bytes())
      std::memcpy(detail::impl(results[k])->mutable_data<char>(), base + layout.carry_offsets[k], bytes);
  }
  return results;
}

}  // namespace kiln::llvm_backend
