// The steps a ScalarProgram is made of (scalar_program.h): what the reader
// of LLVM instructions (scalar_program.cpp) writes and the interpreter
// (scalar_program_run.cpp) executes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::llvm_backend {

/// The type of a slot's elements: LLVM's float, double, i1 (one byte per
/// element), i32 and i64.
enum class Lane : uint8_t { f32, f64, i1, i32, i64 };

inline int lane_bytes(Lane lane) {
  switch (lane) {
    case Lane::i1: return 1;
    case Lane::f32:
    case Lane::i32: return 4;
    default: return 8;
  }
}

enum class StepCode : uint8_t {
  // floating, on `type`
  add,
  subtract,
  multiply,
  divide,
  negate,
  fused_multiply_add,  // one rounding
  multiply_then_add,   // two roundings: llvm.fmuladd where the target has no FMA
  absolute,
  copy_sign,
  square_root,
  round_to_even,
  floor,
  ceil,
  truncate_to_integral,
  round_half_away,
  compare_floats,  // `predicate`: an llvm::CmpInst::Predicate; `type` is the operands'
  // integer, on `type` (i1, i32, i64)
  integer_add,
  integer_subtract,
  integer_multiply,
  shift_left,
  shift_right_logical,
  shift_right_arithmetic,
  bit_and,
  bit_or,
  bit_xor,
  compare_integers,  // `predicate` as above; `type` is the operands'
  // any
  select,  // operands: condition (i1), on true, on false; `type` is the values'
  copy,    // bits as they are (a bitcast between types of one width)
  // conversions from `from` to `type`
  signed_to_float,
  unsigned_to_float,
  float_to_signed,
  float_to_unsigned,
  widen_float,
  narrow_float,
  zero_extend,
  sign_extend,
  truncate_integer,
};

struct Step {
  StepCode code;
  Lane type;
  Lane from = Lane::f32;
  uint8_t predicate = 0;
  int32_t result = 0;
  int32_t operands[3] = {0, 0, 0};
};

/// Elements per block: every slot holds one block, so a program's live
/// values stay in the first levels of cache.
constexpr int64_t program_block = 256;

/// Slots are numbered operands first, then constants, then temporaries.
struct ScalarProgram {
  std::vector<Step> steps;
  std::vector<Lane> operand_lanes;
  int32_t constant_count = 0;
  std::vector<uint64_t> constant_blocks;  // constant k's block at k * program_block
  int32_t temporary_count = 0;
  int32_t result_slot = 0;
  Lane result_lane = Lane::f32;
};

/// The program computing `node` over operands of `operand_dtypes` (made
/// once per operation, attributes and dtypes), or null where the
/// interpreter cannot run its scalar code.
std::shared_ptr<const ScalarProgram> scalar_program(const ir::Node& node, std::span<const DType> operand_dtypes);

/// Runs `steps` over `count` <= program_block elements; slot s is at `slots[s]`.
void run_steps(const std::vector<Step>& steps, char* const* slots, int64_t count);

}  // namespace kiln::llvm_backend
