// Calls a generic lambda with the C++ type of a dtype:
//   dispatch(dtype, [&]<class T>() { ... });
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::detail {

template <class F>
decltype(auto) dispatch(DType dtype, F&& fn) {
  switch (dtype) {
    case DType::bool_: return fn.template operator()<bool>();
    case DType::i32: return fn.template operator()<int32_t>();
    case DType::i64: return fn.template operator()<int64_t>();
    case DType::f32: return fn.template operator()<float>();
    case DType::f64: break;
  }
  return fn.template operator()<double>();
}

}  // namespace kiln::detail
