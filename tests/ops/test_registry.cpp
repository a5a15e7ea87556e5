// Every primitive's record is complete: a shape/dtype rule, a reference
// kernel, derivatives and a batching rule (or a stated reason for none), a
// fusion kind, a cost and a native lowering or a stated reason for none. A
// row that lacks one is named with what it lacks.
#include <gtest/gtest.h>

#include "ops/common/rules.h"

namespace kiln::ops {

TEST(Registry, EveryPrimitiveHasEveryRule) {
  for (int i = 0; i < ir::primitive_count; ++i) {
    auto op = static_cast<Primitive>(i);
    for (const std::string& problem : rule_problems(rules(op)))
      ADD_FAILURE() << ir::primitive_name(op) << ": " << problem;
  }
}

// A throwaway primitive, as a contributor adding atan2 might leave it: shape
// rule, kernel and derivatives written, but no code for the native backend.
AbstractValue infer_throwaway(const Node&, std::span<const AbstractValue* const> inputs) { return *inputs[0]; }
Array evaluate_throwaway(const Node&, std::span<const Array> inputs) { return inputs[0]; }
std::vector<Array> vjp_throwaway(const Node&, std::span<const Array>, const Array&, const Array& cotangent) {
  return {cotangent};
}
Array jvp_throwaway(const Node&, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return tangents[0];
}
Array batch_throwaway(const Node&, std::span<const Array> inputs, std::span<const char>, int64_t) { return inputs[0]; }

PrimitiveRules throwaway_row() {
  return {.infer = &infer_throwaway,
          .evaluate = &evaluate_throwaway,
          .vjp = &vjp_throwaway,
          .jvp = &jvp_throwaway,
          .batch = &batch_throwaway,
          .fusion = Fusion::elementwise};
}

std::string joined(const std::vector<std::string>& problems) {
  std::string text;
  for (const std::string& problem : problems) text += problem + "; ";
  return text;
}

TEST(Registry, CatchesAFusiblePrimitiveWithoutALowering) {
  std::vector<std::string> problems = rule_problems(throwaway_row());
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "no native lowering (elementwise, but no scalar code) and no waiver");

  PrimitiveRules kernel = throwaway_row();
  kernel.fusion = Fusion::kernel;
  EXPECT_EQ(joined(rule_problems(kernel)),
            "no native lowering (a kernel of its own that names no native kernel) and no waiver; ");

  PrimitiveRules reduction = throwaway_row();
  reduction.fusion = Fusion::reduction;
  EXPECT_EQ(joined(rule_problems(reduction)),
            "no native lowering (a reduction that names no combining operation) and no waiver; ");
}

TEST(Registry, AWaiverMustSayWhy) {
  PrimitiveRules waived = throwaway_row();
  waived.no_native_lowering = "runs the reference kernel: too rare to compile";
  EXPECT_TRUE(rule_problems(waived).empty()) << joined(rule_problems(waived));
  waived.no_native_lowering = "";
  EXPECT_EQ(joined(rule_problems(waived)), "a native-lowering waiver that gives no reason; ");

  PrimitiveRules no_derivative = throwaway_row();
  no_derivative.no_derivative = "bool result";
  EXPECT_EQ(joined(rule_problems(no_derivative)),
            "a derivative waiver but also a derivative rule; no native lowering "
            "(elementwise, but no scalar code) and no waiver; ");
}

TEST(Registry, CatchesEveryOtherMissingRule) {
  PrimitiveRules empty;
  EXPECT_EQ(joined(rule_problems(empty)),
            "no shape/dtype rule; no reference kernel; no vjp rule and no waiver; no jvp rule and no waiver; no "
            "batching rule and no waiver; no fusion kind; ");
  PrimitiveRules cheap = throwaway_row();
  cheap.no_native_lowering = "reference kernel";
  cheap.cost = 0;
  EXPECT_EQ(joined(rule_problems(cheap)), "a cost below 1; ");
}

TEST(Registry, CatchesAPrimitiveThatVmapCannotBatch) {
  PrimitiveRules unbatched = throwaway_row();
  unbatched.no_native_lowering = "reference kernel";
  unbatched.batch = nullptr;
  EXPECT_EQ(joined(rule_problems(unbatched)), "no batching rule and no waiver; ");
  unbatched.never_batched = "";
  EXPECT_EQ(joined(rule_problems(unbatched)), "a batching waiver that gives no reason; ");
  unbatched.never_batched = "no operands: the same in every lane";
  EXPECT_TRUE(rule_problems(unbatched).empty()) << joined(rule_problems(unbatched));
  unbatched.batch = &batch_throwaway;
  EXPECT_EQ(joined(rule_problems(unbatched)), "a batching waiver but also a batching rule; ");
}

}  // namespace kiln::ops
