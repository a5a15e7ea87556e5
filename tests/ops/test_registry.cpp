// Every primitive has a shape rule, a reference kernel, and either derivative
// rules or a stated reason it has none.
#include <gtest/gtest.h>

#include "ops/rules.h"

namespace kiln::ops {

TEST(Registry, EveryPrimitiveHasItsRules) {
  for (int i = 0; i < ir::primitive_count; ++i) {
    auto op = static_cast<Primitive>(i);
    const PrimitiveRules& r = rules(op);
    EXPECT_NE(r.infer, nullptr) << ir::primitive_name(op) << " has no shape/dtype rule";
    EXPECT_NE(r.evaluate, nullptr) << ir::primitive_name(op) << " has no reference kernel";
    if (r.no_derivative) {
      EXPECT_EQ(r.vjp, nullptr) << ir::primitive_name(op) << " is waived but has a vjp rule";
      EXPECT_NE(std::string(r.no_derivative), "") << ir::primitive_name(op) << " waiver gives no reason";
    } else {
      EXPECT_NE(r.vjp, nullptr) << ir::primitive_name(op) << " has no vjp rule and no waiver";
      EXPECT_NE(r.jvp, nullptr) << ir::primitive_name(op) << " has no jvp rule and no waiver";
    }
  }
}

}  // namespace kiln::ops
