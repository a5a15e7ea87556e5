// Reading a node's scalar LLVM code into ScalarProgram steps (see the
// header); interpreted_elementwise.cpp runs them.
#include "backend/llvm/scalar_program.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/llvm/engine.h"
#include "backend/llvm/scalar_emitter.h"
#include "backend/llvm/scalar_program_steps.h"
#include "ops/common/rules.h"

namespace kiln::llvm_backend {

namespace {

// Thrown by the emitter where a lowering asks for what a program cannot
// hold (a position); the operation then compiles as before.
struct NotInterpretable {};

class ProgramEmitter final : public LlvmScalarEmitter {
 public:
  using LlvmScalarEmitter::LlvmScalarEmitter;
  ops::ScalarValue literal(const ir::Node& node) override {
    return wrap(constant_value(node.attrs.scalar.as_double(), node.type.dtype));
  }
  ops::ScalarValue iota(const ir::Node&) override { throw NotInterpretable{}; }
};

std::optional<Lane> lane_of(const llvm::Type* type) {
  if (type->isFloatTy()) return Lane::f32;
  if (type->isDoubleTy()) return Lane::f64;
  if (type->isIntegerTy(1)) return Lane::i1;
  if (type->isIntegerTy(32)) return Lane::i32;
  if (type->isIntegerTy(64)) return Lane::i64;
  return std::nullopt;
}

bool is_floating(Lane lane) { return lane == Lane::f32 || lane == Lane::f64; }

// llvm.fmuladd is one fused instruction where the target has FMA and a
// multiply and an add where it has not: the program does what the code does.
bool target_fuses_multiply_add() {
  static const bool fuses = Engine::instance().features().find("+fma") != std::string::npos;
  return fuses;
}

std::optional<StepCode> intrinsic_code(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::fmuladd:
      return target_fuses_multiply_add() ? StepCode::fused_multiply_add : StepCode::multiply_then_add;
    case llvm::Intrinsic::fma: return StepCode::fused_multiply_add;
    case llvm::Intrinsic::fabs: return StepCode::absolute;
    case llvm::Intrinsic::copysign: return StepCode::copy_sign;
    case llvm::Intrinsic::sqrt: return StepCode::square_root;
    case llvm::Intrinsic::roundeven:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::nearbyint: return StepCode::round_to_even;
    case llvm::Intrinsic::floor: return StepCode::floor;
    case llvm::Intrinsic::ceil: return StepCode::ceil;
    case llvm::Intrinsic::trunc: return StepCode::truncate_to_integral;
    case llvm::Intrinsic::round: return StepCode::round_half_away;
    default: return std::nullopt;  // libmvec's functions among them
  }
}

std::optional<StepCode> binary_code(unsigned opcode) {
  switch (opcode) {
    case llvm::Instruction::FAdd: return StepCode::add;
    case llvm::Instruction::FSub: return StepCode::subtract;
    case llvm::Instruction::FMul: return StepCode::multiply;
    case llvm::Instruction::FDiv: return StepCode::divide;
    case llvm::Instruction::Add: return StepCode::integer_add;
    case llvm::Instruction::Sub: return StepCode::integer_subtract;
    case llvm::Instruction::Mul: return StepCode::integer_multiply;
    case llvm::Instruction::Shl: return StepCode::shift_left;
    case llvm::Instruction::LShr: return StepCode::shift_right_logical;
    case llvm::Instruction::AShr: return StepCode::shift_right_arithmetic;
    case llvm::Instruction::And: return StepCode::bit_and;
    case llvm::Instruction::Or: return StepCode::bit_or;
    case llvm::Instruction::Xor: return StepCode::bit_xor;
    default: return std::nullopt;
  }
}

std::optional<StepCode> cast_code(unsigned opcode) {
  switch (opcode) {
    case llvm::Instruction::SIToFP: return StepCode::signed_to_float;
    case llvm::Instruction::UIToFP: return StepCode::unsigned_to_float;
    case llvm::Instruction::FPToSI: return StepCode::float_to_signed;
    case llvm::Instruction::FPToUI: return StepCode::float_to_unsigned;
    case llvm::Instruction::FPExt: return StepCode::widen_float;
    case llvm::Instruction::FPTrunc: return StepCode::narrow_float;
    case llvm::Instruction::ZExt: return StepCode::zero_extend;
    case llvm::Instruction::SExt: return StepCode::sign_extend;
    case llvm::Instruction::Trunc: return StepCode::truncate_integer;
    case llvm::Instruction::BitCast: return StepCode::copy;
    default: return std::nullopt;
  }
}

// Reads the function's one block into steps; nullopt at the first thing a
// program cannot do. Temporaries are reused once their value is dead.
class Reader {
 public:
  std::optional<ScalarProgram> read(llvm::Function& function) {
    if (function.size() != 1) return std::nullopt;  // branches: not straight-line code
    llvm::BasicBlock& block = function.getEntryBlock();
    for (llvm::Argument& argument : function.args()) {
      std::optional<Lane> lane = lane_of(argument.getType());
      if (!lane) return std::nullopt;
      slots_[&argument] = static_cast<int32_t>(program_.operand_lanes.size());
      program_.operand_lanes.push_back(*lane);
    }
    if (!place_constants(block)) return std::nullopt;
    std::unordered_map<const llvm::Value*, size_t> last_use;
    size_t position = 0;
    for (llvm::Instruction& instruction : block) {
      for (llvm::Value* operand : instruction.operands()) last_use[operand] = position;
      ++position;
    }
    position = 0;
    for (llvm::Instruction& instruction : block) {
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(&instruction)) {
        llvm::Value* value = ret->getReturnValue();
        std::optional<Lane> lane = value ? lane_of(value->getType()) : std::nullopt;
        if (!lane || !slots_.contains(value)) return std::nullopt;
        program_.result_slot = slots_[value];
        program_.result_lane = *lane;
        break;
      }
      std::optional<Step> step = read_step(instruction);
      if (!step) return std::nullopt;
      // Operands dying here free their temporaries for later values, not for
      // this step's result: a comparison's byte per element would be
      // overwritten by the select reading it, four bytes per element.
      step->result = take_temporary();
      slots_[&instruction] = step->result;
      for (llvm::Value* operand : instruction.operands())
        if (last_use[operand] == position && is_temporary(operand) &&
            std::find(free_.begin(), free_.end(), slots_[operand]) == free_.end())
          free_.push_back(slots_[operand]);
      program_.steps.push_back(*step);
      ++position;
    }
    // Temporaries were numbered from temporary_base: they follow the operands and constants.
    int32_t first = static_cast<int32_t>(program_.operand_lanes.size()) + program_.constant_count;
    auto shift = [&](int32_t& slot) {
      if (slot >= temporary_base) slot = slot - temporary_base + first;
    };
    for (Step& step : program_.steps) {
      shift(step.result);
      for (int32_t& operand : step.operands) shift(operand);
    }
    shift(program_.result_slot);
    return std::move(program_);
  }

 private:
  // Temporaries are numbered from here while reading, renumbered at the end.
  static constexpr int32_t temporary_base = 1 << 24;

  bool is_temporary(const llvm::Value* value) const {
    auto found = slots_.find(value);
    return found != slots_.end() && found->second >= temporary_base;
  }

  int32_t take_temporary() {
    if (!free_.empty()) {
      int32_t slot = free_.back();
      free_.pop_back();
      return slot;
    }
    return temporary_base + program_.temporary_count++;
  }

  bool place_constants(llvm::BasicBlock& block) {
    int32_t first = static_cast<int32_t>(program_.operand_lanes.size());
    for (llvm::Instruction& instruction : block)
      for (llvm::Value* operand : instruction.operands()) {
        if (!llvm::isa<llvm::Constant>(operand) || slots_.contains(operand)) continue;
        std::optional<uint64_t> bits = constant_bits(operand);
        std::optional<Lane> lane = lane_of(operand->getType());
        if (llvm::isa<llvm::Function>(operand)) continue;  // a call's callee, read by read_step
        if (!bits || !lane) return false;
        slots_[operand] = first + program_.constant_count++;
        size_t at = program_.constant_blocks.size();
        program_.constant_blocks.resize(at + program_block);
        int bytes = lane_bytes(*lane);
        auto* block_bytes = reinterpret_cast<char*>(program_.constant_blocks.data() + at);
        for (int64_t i = 0; i < program_block; ++i) std::memcpy(block_bytes + i * bytes, &*bits, bytes);
      }
    return true;
  }

  static std::optional<uint64_t> constant_bits(const llvm::Value* value) {
    if (auto* real = llvm::dyn_cast<llvm::ConstantFP>(value))
      return real->getValueAPF().bitcastToAPInt().getZExtValue();
    if (auto* integer = llvm::dyn_cast<llvm::ConstantInt>(value)) return integer->getZExtValue();
    return std::nullopt;  // undef, poison, constant expressions
  }

  std::optional<int32_t> slot_of(const llvm::Value* value) const {
    auto found = slots_.find(value);
    if (found == slots_.end()) return std::nullopt;
    return found->second;
  }

  std::optional<Step> read_step(llvm::Instruction& instruction) {
    std::optional<Lane> lane = lane_of(instruction.getType());
    if (!lane) return std::nullopt;
    Step step{.code = StepCode::copy, .type = *lane};
    std::vector<llvm::Value*> inputs;
    if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction)) {
      std::optional<StepCode> code = intrinsic_code(call->getIntrinsicID());
      if (!code || !is_floating(*lane)) return std::nullopt;
      step.code = *code;
      for (unsigned k = 0; k < call->arg_size(); ++k) inputs.push_back(call->getArgOperand(k));
    } else if (llvm::isa<llvm::CallInst>(instruction)) {
      return std::nullopt;  // a library function
    } else if (auto* compare = llvm::dyn_cast<llvm::CmpInst>(&instruction)) {
      std::optional<Lane> operands = lane_of(compare->getOperand(0)->getType());
      if (!operands) return std::nullopt;
      step.code = llvm::isa<llvm::FCmpInst>(compare) ? StepCode::compare_floats : StepCode::compare_integers;
      step.type = *operands;
      step.predicate = static_cast<uint8_t>(compare->getPredicate());
      inputs = {compare->getOperand(0), compare->getOperand(1)};
    } else if (auto* select = llvm::dyn_cast<llvm::SelectInst>(&instruction)) {
      step.code = StepCode::select;
      inputs = {select->getCondition(), select->getTrueValue(), select->getFalseValue()};
    } else if (instruction.getOpcode() == llvm::Instruction::FNeg) {
      step.code = StepCode::negate;
      inputs = {instruction.getOperand(0)};
    } else if (std::optional<StepCode> code = binary_code(instruction.getOpcode())) {
      // Integer arithmetic on i1 is not what the byte per element holds.
      bool integer = *code >= StepCode::integer_add;
      if (integer == is_floating(*lane)) return std::nullopt;
      if (*lane == Lane::i1 && *code < StepCode::bit_and) return std::nullopt;
      step.code = *code;
      inputs = {instruction.getOperand(0), instruction.getOperand(1)};
    } else if (std::optional<StepCode> code = cast_code(instruction.getOpcode())) {
      std::optional<Lane> from = lane_of(instruction.getOperand(0)->getType());
      if (!from || (*code == StepCode::copy && lane_bytes(*from) != lane_bytes(*lane))) return std::nullopt;
      step.code = *code;
      step.from = *from;
      inputs = {instruction.getOperand(0)};
    } else {
      return std::nullopt;  // memory, branches, vectors, freeze
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::optional<int32_t> slot = slot_of(inputs[k]);
      if (!slot) return std::nullopt;
      step.operands[k] = *slot;
    }
    return step;
  }

  ScalarProgram program_;
  std::unordered_map<const llvm::Value*, int32_t> slots_;
  std::vector<int32_t> free_;
};

std::shared_ptr<const ScalarProgram> build_program(const ir::Node& node, std::span<const DType> operand_dtypes) {
  const ops::PrimitiveRules& row = ops::rules(node.op);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = Engine::instance().new_module("kiln_scalar_program", context);
  llvm::IRBuilder<> builder(context);
  ProgramEmitter emitter(builder);
  std::vector<llvm::Type*> parameters;
  for (DType dtype : operand_dtypes) parameters.push_back(emitter.register_type(dtype));
  auto* function =
      llvm::Function::Create(llvm::FunctionType::get(emitter.register_type(node.type.dtype), parameters, false),
                             llvm::Function::ExternalLinkage, "kiln_scalar_program", *module);
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", function));
  std::vector<ops::ScalarValue> operands;
  for (llvm::Argument& argument : function->args()) operands.push_back(LlvmScalarEmitter::wrap(&argument));
  try {
    builder.CreateRet(LlvmScalarEmitter::unwrap(row.lower(emitter, node, operands, operand_dtypes)));
  } catch (const NotInterpretable&) {
    return nullptr;
  }
  std::optional<ScalarProgram> program = Reader().read(*function);
  if (!program) return nullptr;
  return std::make_shared<const ScalarProgram>(std::move(*program));
}

// Floats, and bool as the byte of 0 or 1 an i1 lane holds: the comparisons,
// logical operations and selects of a ReLU's derivative among them.
bool interpretable_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bool_; }

// Programs by operation, attributes and dtypes: a process meets a few dozen.
class Programs {
 public:
  std::shared_ptr<const ScalarProgram> get(const ir::Node& node, std::span<const DType> operand_dtypes) {
    std::lock_guard lock(mutex_);
    for (const Entry& entry : entries_)
      if (entry.op == node.op && entry.dtype == node.type.dtype && entry.attrs == node.attrs &&
          std::equal(entry.operands.begin(), entry.operands.end(), operand_dtypes.begin(), operand_dtypes.end()))
        return entry.program;
    std::shared_ptr<const ScalarProgram> program = build_program(node, operand_dtypes);
    entries_.push_back({node.op, node.type.dtype, node.attrs, {operand_dtypes.begin(), operand_dtypes.end()}, program});
    return program;
  }

 private:
  struct Entry {
    ir::Primitive op;
    DType dtype;
    ir::Attributes attrs;
    std::vector<DType> operands;
    std::shared_ptr<const ScalarProgram> program;  // null: not interpretable
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace

std::shared_ptr<const ScalarProgram> scalar_program(const ir::Node& node, std::span<const DType> operand_dtypes) {
  const ops::PrimitiveRules& row = ops::rules(node.op);
  if (row.fusion != ops::Fusion::elementwise || !row.lower || operand_dtypes.empty() ||
      !interpretable_dtype(node.type.dtype) ||
      !std::all_of(operand_dtypes.begin(), operand_dtypes.end(), interpretable_dtype))
    return nullptr;
  static auto& programs = *new Programs;  // never destroyed: first tiers may run while the process exits
  return programs.get(node, operand_dtypes);
}

}  // namespace kiln::llvm_backend
