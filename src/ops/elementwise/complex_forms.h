// The complex forms of elementwise functions whose primitives take real
// values only, written as composites of real functions of the parts
// (elementwise_composites.cpp); the public functions in unary.cpp route
// complex arguments to them.
#pragma once

#include "kiln/array.h"

namespace kiln::ops {

Array complex_expm1(const Array& z);
Array complex_log1p(const Array& z);
Array complex_log2(const Array& z);
Array complex_arctan(const Array& z);

}  // namespace kiln::ops
