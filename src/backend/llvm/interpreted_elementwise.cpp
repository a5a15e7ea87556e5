// Running scalar programs (scalar_program.h): an eager operation's, or one
// composed for a tree of elementwise operations a first tier fuses, over
// blocks of elements on kiln's threads.
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "backend/llvm/interpreted_node.h"
#include "backend/llvm/scalar_program.h"
#include "backend/llvm/scalar_program_steps.h"
#include "core/array_impl.h"
#include "core/error_format.h"
#include "ops/common/graph_dot.h"
#include "ops/common/rules.h"
#include "runtime/thread_pool.h"

namespace kiln::llvm_backend {

namespace {

// An operand of a program run: its elements, and after how many they repeat
// (0: never; an operand broadcast along leading axes, a bias row or one
// value, is read in place rather than materialized at the result's size).
struct ProgramOperand {
  const char* data = nullptr;
  int64_t period = 0;
};

constexpr size_t most_node_operands = 3;  // select and fused multiply-add

// Operand k's block where its elements [at, at + n) are not in one piece:
// one value spread over the block, or a row's end followed by its start.
void fill_repeated(const ProgramOperand& operand, int bytes, int64_t at, int64_t n, char* block) {
  if (operand.period == 1) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(block + i * bytes, operand.data, static_cast<size_t>(bytes));
    return;
  }
  int64_t offset = at % operand.period;
  for (int64_t i = 0; i < n;) {
    int64_t piece = std::min(n - i, operand.period - offset);
    std::memcpy(block + i * bytes, operand.data + offset * bytes, static_cast<size_t>(piece * bytes));
    i += piece;
    offset = 0;
  }
}

// `program` over elements [begin, end) of its result at `result`.
void run_scalar_program(const ScalarProgram& program, std::span<const ProgramOperand> operands, char* result,
                        int64_t begin, int64_t end) {
  size_t operand_count = program.operand_lanes.size();
  KILN_CHECK(operands.size() == operand_count, "a scalar program run with the wrong number of operands");
  size_t slot_count = operand_count + static_cast<size_t>(program.constant_count + program.temporary_count);
  thread_local std::vector<char*> slots;
  thread_local std::vector<uint64_t> temporaries;  // 8 bytes per element: every lane fits
  thread_local std::vector<uint64_t> repeated;     // a block per operand, used where it repeats
  slots.resize(slot_count);
  temporaries.resize(static_cast<size_t>(program.temporary_count * program_block));
  repeated.resize(operand_count * program_block);
  for (int32_t k = 0; k < program.constant_count; ++k)
    slots[operand_count + static_cast<size_t>(k)] =
        reinterpret_cast<char*>(const_cast<uint64_t*>(program.constant_blocks.data() + k * program_block));
  for (int32_t k = 0; k < program.temporary_count; ++k)
    slots[operand_count + static_cast<size_t>(program.constant_count + k)] =
        reinterpret_cast<char*>(temporaries.data() + k * program_block);
  auto repeated_block = [&](size_t k) { return reinterpret_cast<char*>(repeated.data() + k * program_block); };
  for (size_t k = 0; k < operand_count; ++k)
    if (operands[k].period == 1)
      fill_repeated(operands[k], lane_bytes(program.operand_lanes[k]), 0, program_block, repeated_block(k));
  int result_bytes = lane_bytes(program.result_lane);
  for (int64_t at = begin; at < end; at += program_block) {
    int64_t n = std::min(program_block, end - at);
    for (size_t k = 0; k < operand_count; ++k) {
      const ProgramOperand& operand = operands[k];
      int bytes = lane_bytes(program.operand_lanes[k]);
      int64_t offset = operand.period == 0 ? at : at % operand.period;
      if (operand.period == 1) {
        slots[k] = repeated_block(k);
      } else if (operand.period == 0 || offset + n <= operand.period) {
        slots[k] = const_cast<char*>(operand.data) + offset * bytes;
      } else {
        fill_repeated(operand, bytes, at, n, repeated_block(k));
        slots[k] = repeated_block(k);
      }
    }
    run_steps(program.steps, slots.data(), n);
    std::memcpy(result + at * result_bytes, slots[static_cast<size_t>(program.result_slot)],
                static_cast<size_t>(n * result_bytes));
  }
}

// The program over `count` elements in parts of whole blocks on kiln's
// threads: an operation that no compiled kernel serves yet would otherwise
// leave the other cores idle (the first call of a graph runs many of them,
// each writing fresh memory).
void run_in_parts(const ScalarProgram& program, std::span<const ProgramOperand> operands, char* result, int64_t count) {
  int64_t blocks = (count + program_block - 1) / program_block;
  auto cost = static_cast<int64_t>(program.steps.size() + 1) * program_block;
  runtime::parallel_for(blocks, cost, [&](int64_t first, int64_t last) {
    run_scalar_program(program, operands, result, first * program_block, std::min(count, last * program_block));
  });
}

// What `interprets` says, with the node's own program: asked on every eager
// call of an operation that compiles, so the checks without a lock come first.
std::shared_ptr<const ScalarProgram> program_for(const ir::Graph& graph, const ir::Node& node,
                                                 bool at_any_size = false) {
  if (node.inputs.empty() || node.inputs.size() > most_node_operands || node.symbolic ||
      (!at_any_size && node.type.size() > interpreted_elements_limit))
    return nullptr;
  std::array<DType, most_node_operands> dtypes;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const ir::Node& operand = graph.nodes[static_cast<size_t>(node.inputs[k])];
    if (operand.type.shape != node.type.shape) return nullptr;
    dtypes[k] = operand.type.dtype;
  }
  return scalar_program(node, std::span<const DType>(dtypes.data(), node.inputs.size()));
}

// An eager graph a program computes: elementwise nodes over the graph's
// arguments, which they may read through broadcasts along leading axes, the
// last node its one output. One node is an eager operation; more, a tree a
// first tier fuses (interp/fused_trees.h).
struct Region {
  std::vector<const ir::Node*> arguments;  // the graph's inputs, in node order
  std::vector<ir::ValueId> nodes;          // the computing nodes, in order
};

std::optional<Region> region_of(const ir::Graph& graph) {
  if (graph.outputs.size() != 1 || graph.symbols > 0) return std::nullopt;
  Region region;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) {
      region.arguments.push_back(&node);
    } else if (node.op == ir::Primitive::broadcast) {
      // Read in place: an argument repeated along leading axes.
      const ir::Node& source = graph.nodes[static_cast<size_t>(node.inputs[0])];
      if (source.op != ir::Primitive::input || node.symbolic ||
          !ir::repeats_along_leading_axes(source.type.shape, node.type.shape))
        return std::nullopt;
    } else {
      region.nodes.push_back(static_cast<ir::ValueId>(i));
    }
  }
  if (region.nodes.empty() || region.nodes.back() != graph.outputs[0]) return std::nullopt;
  return region;
}

// One program computing a region's nodes in order. Each node's program is
// copied with its operand slots bound to the region's arguments or to earlier
// nodes' results and its constants appended; its temporaries go to scratch
// slots that every node reuses, but for its result, which keeps a slot of
// its own. Each step is the node's own, so the bits are the node's too.
class Composer {
 public:
  Composer(const ir::Graph& graph, const Region& region) : graph_(graph), region_(region) {}

  std::shared_ptr<const ScalarProgram> compose(bool at_any_size) {
    std::vector<std::shared_ptr<const ScalarProgram>> programs;
    int32_t constants = 0, results = 0, scratch = 0;
    for (ir::ValueId id : region_.nodes) {
      const ir::Node& node = graph_.nodes[static_cast<size_t>(id)];
      std::shared_ptr<const ScalarProgram> program = program_for(graph_, node, at_any_size);
      if (!program) return nullptr;
      constants += program->constant_count;
      bool result_is_temporary = program->result_slot >= first_temporary(*program);
      results += result_is_temporary ? 1 : 0;
      scratch = std::max(scratch, program->temporary_count - (result_is_temporary ? 1 : 0));
      programs.push_back(std::move(program));
    }
    auto arguments = static_cast<int32_t>(region_.arguments.size());
    composed_.operand_lanes.resize(region_.arguments.size());
    composed_.constant_count = constants;
    composed_.temporary_count = results + scratch;
    value_slots_.assign(graph_.nodes.size(), -1);
    for (int32_t k = 0; k < arguments; ++k) value_slots_[argument_id(k)] = k;
    next_constant_ = arguments;
    next_result_ = arguments + constants;
    first_scratch_ = next_result_ + results;
    for (size_t n = 0; n < region_.nodes.size(); ++n)
      if (!append(graph_.nodes[static_cast<size_t>(region_.nodes[n])], *programs[n])) return nullptr;
    composed_.result_slot = value_slots_[static_cast<size_t>(region_.nodes.back())];
    composed_.result_lane = programs.back()->result_lane;
    return std::make_shared<const ScalarProgram>(std::move(composed_));
  }

 private:
  static int32_t first_temporary(const ScalarProgram& program) {
    return static_cast<int32_t>(program.operand_lanes.size()) + program.constant_count;
  }
  size_t argument_id(int32_t k) const {
    return static_cast<size_t>(region_.arguments[static_cast<size_t>(k)] - graph_.nodes.data());
  }

  bool append(const ir::Node& node, const ScalarProgram& program) {
    auto operands = static_cast<int32_t>(program.operand_lanes.size());
    int32_t temporaries_from = first_temporary(program);
    std::vector<int32_t> slot_of(static_cast<size_t>(temporaries_from + program.temporary_count));
    for (int32_t k = 0; k < operands; ++k) {
      ir::ValueId input = node.inputs[static_cast<size_t>(k)];
      const ir::Node& operand = graph_.nodes[static_cast<size_t>(input)];
      if (operand.op == ir::Primitive::broadcast) input = operand.inputs[0];
      int32_t slot = value_slots_[static_cast<size_t>(input)];
      if (slot < 0) return false;
      slot_of[static_cast<size_t>(k)] = slot;
      if (slot < static_cast<int32_t>(region_.arguments.size()))
        composed_.operand_lanes[static_cast<size_t>(slot)] = program.operand_lanes[static_cast<size_t>(k)];
    }
    for (int32_t c = 0; c < program.constant_count; ++c) slot_of[static_cast<size_t>(operands + c)] = next_constant_++;
    composed_.constant_blocks.insert(composed_.constant_blocks.end(), program.constant_blocks.begin(),
                                     program.constant_blocks.end());
    int32_t scratch = first_scratch_;
    for (int32_t t = 0; t < program.temporary_count; ++t) {
      int32_t slot = temporaries_from + t;
      slot_of[static_cast<size_t>(slot)] = slot == program.result_slot ? next_result_++ : scratch++;
    }
    for (Step step : program.steps) {
      step.result = slot_of[static_cast<size_t>(step.result)];
      for (int32_t& operand : step.operands) operand = slot_of[static_cast<size_t>(operand)];
      composed_.steps.push_back(step);
    }
    value_slots_[static_cast<size_t>(&node - graph_.nodes.data())] = slot_of[static_cast<size_t>(program.result_slot)];
    return true;
  }

  const ir::Graph& graph_;
  const Region& region_;
  ScalarProgram composed_;
  std::vector<int32_t> value_slots_;  // by value id: the slot holding it
  int32_t next_constant_ = 0, next_result_ = 0, first_scratch_ = 0;
};

class InterpretedExecutable final : public InterpretedNode {
 public:
  InterpretedExecutable(std::shared_ptr<const ir::Graph> graph, const Region& region,
                        std::shared_ptr<const ScalarProgram> program)
      : InterpretedNode(graph, graph->nodes[static_cast<size_t>(region.nodes.back())], region.arguments,
                        ops::fused_name(*graph, region.nodes)),
        program_(std::move(program)) {}

 private:
  void compute(std::span<const detail::ArrayImpl* const> operands, detail::ArrayImpl& result) const override {
    std::vector<ProgramOperand> read(operands.size());
    int64_t count = node().type.size();
    for (size_t k = 0; k < operands.size(); ++k) {
      int64_t size = operands[k]->type.size();
      read[k] = {static_cast<const char*>(operands[k]->buffer->data()), size < count ? size : 0};
    }
    run_in_parts(*program_, read, static_cast<char*>(result.buffer->data()), count);
  }
  // Each block's result is copied out after every step read its operands.
  bool writes_over_operands() const override { return true; }

  std::shared_ptr<const ScalarProgram> program_;
};

}  // namespace

bool interprets(const ir::Graph& graph, const ir::Node& node) { return program_for(graph, node) != nullptr; }

std::shared_ptr<const runtime::Executable> interpreted_executable(std::shared_ptr<const ir::Graph> graph,
                                                                  bool at_any_size) {
  std::optional<Region> region = region_of(*graph);
  if (!region) return nullptr;
  std::shared_ptr<const ScalarProgram> program = Composer(*graph, *region).compose(at_any_size);
  if (!program) return nullptr;
  return std::make_shared<InterpretedExecutable>(graph, *region, std::move(program));
}

}  // namespace kiln::llvm_backend
