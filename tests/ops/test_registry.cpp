// Every primitive has a shape rule and a reference kernel.
#include <gtest/gtest.h>

#include "ops/rules.h"

namespace kiln::ops {

TEST(Registry, EveryPrimitiveHasItsRules) {
  for (int i = 0; i < ir::primitive_count; ++i) {
    auto op = static_cast<Primitive>(i);
    EXPECT_NE(rules(op).infer, nullptr) << ir::primitive_name(op) << " has no shape/dtype rule";
    EXPECT_NE(rules(op).evaluate, nullptr) << ir::primitive_name(op) << " has no reference kernel";
  }
}

}  // namespace kiln::ops
