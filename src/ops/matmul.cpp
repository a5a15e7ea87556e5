// matmul primitives (to be filled in).
#include "ops/rules.h"

namespace kiln::ops {
void register_matmul_rules(RuleTable&) {}
}  // namespace kiln::ops
