// indexing primitives (to be filled in).
#include "ops/rules.h"

namespace kiln::ops {
void register_indexing_rules(RuleTable&) {}
}  // namespace kiln::ops
