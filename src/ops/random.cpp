// random primitives (to be filled in).
#include "ops/rules.h"

namespace kiln::ops {
void register_random_rules(RuleTable&) {}
}  // namespace kiln::ops
