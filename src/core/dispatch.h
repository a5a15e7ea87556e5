// Calls a generic lambda with the C++ type of a dtype:
//   dispatch(dtype, [&]<class T>() { ... });
// Every dtype instantiates the lambda, c64 and c128 (std::complex) too: a
// kernel that has no meaning for complex numbers keeps them out with
// `if constexpr (detail::is_complex_element<T>)`, after its shape rule has
// refused them with a user's error.
#pragma once

#include <complex>
#include <cstdint>

#include "core/convert.h"
#include "kiln/dtype.h"

namespace kiln::detail {

template <class F>
decltype(auto) dispatch(DType dtype, F&& fn) {
  switch (dtype) {
    case DType::bool_: return fn.template operator()<bool>();
    case DType::i8: return fn.template operator()<int8_t>();
    case DType::i16: return fn.template operator()<int16_t>();
    case DType::i32: return fn.template operator()<int32_t>();
    case DType::i64: return fn.template operator()<int64_t>();
    case DType::u8: return fn.template operator()<uint8_t>();
    case DType::u16: return fn.template operator()<uint16_t>();
    case DType::u32: return fn.template operator()<uint32_t>();
    case DType::u64: return fn.template operator()<uint64_t>();
    case DType::f16: return fn.template operator()<float16>();
    case DType::bf16: return fn.template operator()<bfloat16>();
    case DType::f32: return fn.template operator()<float>();
    case DType::c64: return fn.template operator()<std::complex<float>>();
    case DType::c128: return fn.template operator()<std::complex<double>>();
    case DType::f64: break;
  }
  return fn.template operator()<double>();
}

}  // namespace kiln::detail
