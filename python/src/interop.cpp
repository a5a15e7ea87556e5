// Arrays in and out of Python without copies: NumPy arrays and DLPack tensors
// are read in place when kiln can (native byte order, row-major, aligned),
// and kiln arrays are lent to NumPy (buffer protocol) and to DLPack consumers
// read-only, alive as long as the borrower's view.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "bindings.h"
#include "core/array_impl.h"
#include "core/error_format.h"

namespace kiln::python {
namespace {

// DLPack 0.8 added bool as its own type code; older headers lack the name.
constexpr uint8_t dlpack_bool_code = 6;

// A lent buffer may be released by any thread (a pool worker dropping the
// last array that reads it) while the thread holding the GIL waits for that
// worker: releasing the Python owner then could deadlock. Releases without
// the GIL are queued and run by the interpreter at its next pending call.
std::mutex pending_mutex;
std::vector<PyObject*> pending_releases;

int release_pending(void*) {
  std::vector<PyObject*> releases;
  {
    std::lock_guard lock(pending_mutex);
    releases.swap(pending_releases);
  }
  for (PyObject* object : releases) Py_DECREF(object);
  return 0;
}

void release_python_owner(const void* pointer) {
  auto* object = static_cast<PyObject*>(const_cast<void*>(pointer));
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // the interpreter frees everything at exit
  if (PyGILState_Check()) {
    Py_DECREF(object);
    return;
  }
  bool schedule = false;
  {
    std::lock_guard lock(pending_mutex);
    schedule = pending_releases.empty();
    pending_releases.push_back(object);
  }
  if (schedule) Py_AddPendingCall(&release_pending, nullptr);
}

// A kiln array reading `data` in place, `owner` kept alive while it does.
Array lend(void* data, DType dtype, Shape shape, std::shared_ptr<const void> owner) {
  // The lender's memory already holds the array: its size is one kiln can hold.
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->type = detail::AbstractValue{dtype, false, std::move(shape)};
  impl->buffer = std::make_shared<detail::Buffer>(data, impl->type.bytes(), std::move(owner));
  return detail::wrap(std::move(impl));
}

std::shared_ptr<const void> hold(py::handle object) {
  Py_INCREF(object.ptr());
  return std::shared_ptr<const void>(object.ptr(), &release_python_owner);
}

// Read from NumPy's structs directly: kn.asarray of a NumPy array is a
// per-step call in training loops, and attribute lookups cost microseconds.
const py::detail::PyArrayDescr_Proxy& descriptor(const py::array& array) {
  return *py::detail::array_descriptor_proxy(py::detail::array_proxy(array.ptr())->descr);
}

// A dtype by its kind (NumPy's letters: b, i, u, f, c) and size in bytes:
// what NumPy's descriptors and DLPack's type codes both say.
std::optional<DType> dtype_of_kind(char kind, int bytes) {
  for (int k = 0; k < dtype_count; ++k) {
    auto dtype = static_cast<DType>(k);
    char own = dtype == DType::bool_ ? 'b'
               : is_complex(dtype)   ? 'c'
               : is_floating(dtype)  ? 'f'
               : is_unsigned(dtype)  ? 'u'
                                     : 'i';
    if (own == kind && static_cast<int>(dtype_size(dtype)) == bytes && dtype != DType::bf16) return dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_of_numpy(const py::array& array) {
  const py::detail::PyArrayDescr_Proxy& descr = descriptor(array);
  return dtype_of_kind(descr.kind, descr.elsize);
}

bool readable_in_place(const py::array& array) {
  int flags = py::detail::array_proxy(array.ptr())->flags;
  bool native = descriptor(array).byteorder != '>';  // '<', '=' or '|' on the little-endian machines kiln runs on
  return native && (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) &&
         (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_);
}

[[noreturn]] void refuse_copy(const std::string& why) {
  throw py::value_error("asarray: copy=False, but " + why + "; pass copy=None to let kiln copy");
}

Array from_numpy(const py::array& array, std::optional<DType> dtype, std::optional<bool> copy) {
  std::optional<DType> own = dtype_of_numpy(array);
  if (!own)
    throw py::type_error("asarray: NumPy dtype " + std::string(py::str(array.dtype())) +
                         " has no kiln dtype; convert it first (e.g. .astype(np.float32))");
  Shape shape(array.shape(), array.shape() + array.ndim());
  if (dtype && *dtype != *own) {
    if (copy == false) refuse_copy("the array is " + std::string(numpy_name(*own)) + ", not " + numpy_name(*dtype));
    return astype(from_numpy(array, std::nullopt, std::nullopt), *dtype, here());
  }
  bool in_place = readable_in_place(array);
  if (copy == false && !in_place) refuse_copy("the array is not native-endian, aligned and row-major");
  if (copy == true || !in_place) {
    py::module_ numpy = py::module_::import("numpy");
    py::array packed = numpy.attr("array")(array, py::arg("dtype") = array.dtype().attr("newbyteorder")("="),
                                           py::arg("order") = "C", py::arg("copy") = true);
    return lend(packed.mutable_data(), *own, std::move(shape), hold(packed));
  }
  return lend(const_cast<void*>(array.data()), *own, std::move(shape), hold(array));
}

// Python scalars and nested sequences take kiln's default dtypes for their
// kind (int32, float32), as JAX does; an int too large for int32 keeps 64 bits.
Array from_sequence(py::handle object, std::optional<DType> dtype) {
  py::module_ numpy = py::module_::import("numpy");
  py::array array;
  try {
    array = numpy.attr("asarray")(object);
  } catch (py::error_already_set& error) {
    throw py::value_error("asarray: cannot make an array of " + std::string(py::repr(object)).substr(0, 80) + ": " +
                          py::str(error.value()).cast<std::string>());
  }
  char kind = array.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c')
    throw py::type_error("asarray: cannot make a kiln array of " + std::string(py::repr(object)).substr(0, 80) +
                         " (NumPy reads it as dtype " + std::string(py::str(array.dtype())) +
                         "); give numbers, nested lists of numbers, or arrays");
  // NumPy scalars (np.float64(1.5)) keep their dtype; Python's numbers take kiln's defaults.
  if (!dtype && !py::isinstance<py::array>(object) && !py::hasattr(object, "dtype")) {
    if (kind == 'f' && array.dtype().itemsize() == 8) dtype = DType::f32;
    if (kind == 'c' && array.dtype().itemsize() == 16) dtype = DType::c64;
    if (kind == 'i' && array.dtype().itemsize() == 8) {
      bool fits = array.size() == 0 || (array.attr("min")().cast<int64_t>() >= INT32_MIN &&
                                        array.attr("max")().cast<int64_t>() <= INT32_MAX);
      dtype = fits ? DType::i32 : DType::i64;
    }
  }
  return from_numpy(array, dtype, std::nullopt);
}

// DLPack: a tensor given by a capsule, read in place when row-major.
std::optional<DType> dtype_of_dlpack(DLDataType type) {
  if (type.lanes != 1 || type.bits % 8 != 0) return std::nullopt;
  int bytes = type.bits / 8;
  switch (type.code) {
    case kDLInt: return dtype_of_kind('i', bytes);
    case kDLUInt: return dtype_of_kind('u', bytes);
    case kDLFloat: return dtype_of_kind('f', bytes);
    case kDLComplex: return dtype_of_kind('c', bytes);
    case kDLBfloat: return bytes == 2 ? std::optional(DType::bf16) : std::nullopt;
    case dlpack_bool_code: return dtype_of_kind('b', bytes);
    default: return std::nullopt;
  }
}

DLDataType dlpack_type(DType dtype) {
  auto bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  if (dtype == DType::bool_) return DLDataType{dlpack_bool_code, 8, 1};
  if (dtype == DType::bf16) return DLDataType{kDLBfloat, 16, 1};
  if (is_complex(dtype)) return DLDataType{kDLComplex, bits, 1};
  if (is_floating(dtype)) return DLDataType{kDLFloat, bits, 1};
  return DLDataType{static_cast<uint8_t>(is_unsigned(dtype) ? kDLUInt : kDLInt), bits, 1};
}

// Copies a strided tensor into a fresh row-major array.
Array copy_strided(const DLTensor& tensor, DType dtype, const Shape& shape) {
  Array result = detail::allocate(detail::AbstractValue{dtype, false, shape});
  auto* target = static_cast<std::byte*>(detail::impl(result)->buffer->data());
  const auto* source = static_cast<const std::byte*>(tensor.data) + tensor.byte_offset;
  size_t item = dtype_size(dtype);
  int64_t count = shape_size(shape);
  std::vector<int64_t> strides(shape.size(), 1);  // DLPack: no strides means row-major
  for (size_t d = shape.size(); d-- > 0;)
    if (tensor.strides != nullptr) strides[d] = tensor.strides[d];
    else if (d + 1 < shape.size()) strides[d] = strides[d + 1] * shape[d + 1];
  std::vector<int64_t> position(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) offset += position[d] * strides[d];
    std::memcpy(target + static_cast<size_t>(i) * item, source + offset * static_cast<int64_t>(item), item);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++position[d] < shape[d]) break;
      position[d] = 0;
    }
  }
  return result;
}

Array from_dlpack_capsule(py::capsule capsule, std::optional<bool> copy) {
  if (std::strcmp(capsule.name(), "dltensor") != 0)
    throw py::value_error("from_dlpack: the capsule is '" + std::string(capsule.name()) +
                          "', not an unused 'dltensor' (a DLPack capsule is consumed once)");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  std::shared_ptr<const void> owner(managed, [](const void* pointer) {
    auto* tensor = static_cast<DLManagedTensor*>(const_cast<void*>(pointer));
    if (tensor->deleter) tensor->deleter(tensor);
  });
  const DLTensor& tensor = managed->dl_tensor;
  if (tensor.device.device_type != kDLCPU && tensor.device.device_type != kDLCUDAHost)
    throw py::value_error("from_dlpack: the tensor is on device type " + std::to_string(tensor.device.device_type) +
                          "; kiln reads CPU memory: copy it to the CPU first (e.g. tensor.cpu())");
  std::optional<DType> dtype = dtype_of_dlpack(tensor.dtype);
  if (!dtype)
    throw py::type_error("from_dlpack: DLPack type (code " + std::to_string(tensor.dtype.code) + ", " +
                         std::to_string(tensor.dtype.bits) + " bits, " + std::to_string(tensor.dtype.lanes) +
                         " lanes) has no kiln dtype");
  Shape shape(tensor.shape, tensor.shape + tensor.ndim);
  bool row_major = true;
  if (tensor.strides != nullptr) {
    int64_t expected = 1;
    for (int d = tensor.ndim; d-- > 0;) {
      if (shape[static_cast<size_t>(d)] != 1 && tensor.strides[d] != expected) row_major = false;
      expected *= shape[static_cast<size_t>(d)];
    }
  }
  auto* data = static_cast<std::byte*>(tensor.data) + tensor.byte_offset;
  bool aligned = reinterpret_cast<uintptr_t>(data) % dtype_size(*dtype) == 0;
  if (copy == false && !(row_major && aligned)) refuse_copy("the tensor is not row-major and aligned");
  if (shape_size(shape) == 0) return zeros(shape, *dtype, here());
  if (row_major && aligned && copy != true) return lend(data, *dtype, std::move(shape), std::move(owner));
  return copy_strided(tensor, *dtype, shape);
}

struct ExportedTensor {
  DLManagedTensor managed;
  Array array;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

getbufferproc pybind_getbuffer = nullptr;

int translated_getbuffer(PyObject* object, Py_buffer* view, int flags) {
  try {
    return pybind_getbuffer(object, view, flags);
  } catch (...) {
    if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators) ||
        py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators))
      return -1;
    PyErr_SetString(PyExc_BufferError, "kiln: an unknown error while exporting an array's buffer");
    return -1;
  }
}

py::capsule to_dlpack(const Array& array) {
  const detail::ArrayImpl& impl = detail::impl_of(array, "__dlpack__", here());
  if (impl.trace)
    detail::raise<ConcretizationError>("__dlpack__", "cannot export traced array " + impl.type.to_string(), here(),
                                       "a traced value exists only when the compiled code runs: export the result "
                                       "of the jitted call instead");
  auto* exported = new ExportedTensor{};
  exported->array = array;
  exported->shape = impl.type.shape;
  exported->strides.assign(impl.type.shape.size(), 1);
  for (size_t d = exported->shape.size(); d-- > 1;)
    exported->strides[d - 1] = exported->strides[d] * exported->shape[d];
  DLTensor& tensor = exported->managed.dl_tensor;
  tensor.data = const_cast<void*>(impl.buffer->data());
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<int32_t>(exported->shape.size());
  tensor.dtype = dlpack_type(impl.type.dtype);
  tensor.shape = exported->shape.data();
  tensor.strides = exported->strides.data();
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) { delete static_cast<ExportedTensor*>(self->manager_ctx); };
  return py::capsule(&exported->managed, "dltensor", [](PyObject* capsule) {
    // A consumer renames the capsule when it takes the tensor over.
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      managed->deleter(managed);
    }
  });
}

const char* buffer_format(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "?";
    case DType::i8: return "b";
    case DType::i16: return "h";
    case DType::i32: return "i";
    case DType::i64: return "q";
    case DType::u8: return "B";
    case DType::u16: return "H";
    case DType::u32: return "I";
    case DType::u64: return "Q";
    case DType::f16: return "e";
    case DType::f32: return "f";
    case DType::f64: return "d";
    case DType::c64: return "Zf";
    case DType::c128: return "Zd";
    case DType::bf16: return nullptr;
  }
  return nullptr;
}

}  // namespace

Array to_array(py::handle object, std::optional<DType> dtype, std::optional<bool> copy) {
  if (const Array* pointer = array_pointer(object)) {
    const Array& array = *pointer;
    if (dtype && *dtype != array.dtype(here())) {
      if (copy == false)
        refuse_copy("the array is " + std::string(numpy_name(array.dtype())) + ", not " + numpy_name(*dtype));
      return astype(array, *dtype, here());
    }
    if (copy == true && !array.is_tracer()) return detail::copy_of(array);
    return array;
  }
  if (std::optional<Scalar> number = to_scalar(object)) {
    if (dtype) return full({}, *number, *dtype, here());
    bool wide =
        number->kind() == Scalar::Kind::integer && (number->as_int() < INT32_MIN || number->as_int() > INT32_MAX);
    if (wide) return full({}, *number, DType::i64, here());  // beyond the default int32: 64 bits, as a list would
    return detail::weak_scalar(*number);
  }
  if (py::isinstance<py::array>(object)) return from_numpy(py::reinterpret_borrow<py::array>(object), dtype, copy);
  if (py::hasattr(object, "__dlpack__") && !py::isinstance<py::sequence>(object)) {
    Array array = from_dlpack_capsule(object.attr("__dlpack__")(), copy);
    return dtype && *dtype != array.dtype() ? astype(array, *dtype, here()) : array;
  }
  if (copy == false)
    refuse_copy("a " + std::string(py::str(py::type::handle_of(object).attr("__name__"))) + " is not an array");
  return from_sequence(object, dtype);
}

void bind_interop(py::module_& module) {
  module.def(
      "asarray",
      [](py::handle object, py::handle dtype, py::handle device, std::optional<bool> copy) {
        if (!device.is_none() && py::str(device).cast<std::string>() != "cpu")
          throw py::value_error("asarray: kiln arrays live on the cpu device, not " + std::string(py::str(device)));
        return to_array(object, to_optional_dtype(dtype), copy);
      },
      py::arg("obj"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("copy") = py::none());
  module.def(
      "from_dlpack",
      [](py::handle object, py::handle device, std::optional<bool> copy) {
        if (!device.is_none() && py::str(device).cast<std::string>() != "cpu")
          throw py::value_error("from_dlpack: kiln arrays live on the cpu device, not " + std::string(py::str(device)));
        if (py::isinstance<py::capsule>(object))
          return from_dlpack_capsule(py::reinterpret_borrow<py::capsule>(object), copy);
        if (!py::hasattr(object, "__dlpack__"))
          throw py::type_error("from_dlpack: " + std::string(py::repr(object)).substr(0, 60) +
                               " has no __dlpack__ method; give a DLPack-capable array (NumPy, PyTorch, kiln)");
        return from_dlpack_capsule(object.attr("__dlpack__")(), copy);
      },
      py::arg("x"), py::kw_only(), py::arg("device") = py::none(), py::arg("copy") = py::none());

  auto array = py::reinterpret_borrow<py::class_<Array>>(module.attr("Array"));
  array.def(
      "__dlpack__",
      [](const Array& self, py::handle stream, py::handle, py::handle, std::optional<bool> copy) {
        if (!stream.is_none() && !(py::isinstance<py::int_>(stream) && stream.cast<int64_t>() == -1))
          throw py::value_error("__dlpack__: kiln arrays live on the cpu, where stream must be None");
        return to_dlpack(copy == true ? detail::copy_of(self) : self);
      },
      py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
      py::arg("dl_device") = py::none(), py::arg("copy") = py::none());
  array.def("__dlpack_device__", [](const Array&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); });
  array.def_buffer([](const Array& self) -> py::buffer_info {
    const detail::ArrayImpl& impl = detail::impl_of(self, "np.asarray", here());
    const char* format = buffer_format(impl.type.dtype);
    if (impl.trace)
      detail::raise<ConcretizationError>(
          "np.asarray", "cannot read the values of traced array " + impl.type.to_string(), here(),
          "a traced value is known only when the compiled code runs: compute with kn operations (kn.where for a "
          "data-dependent choice), or convert the result of the jitted call");
    if (format == nullptr) throw py::buffer_error("NumPy has no bfloat16");
    std::vector<py::ssize_t> shape(impl.type.shape.begin(), impl.type.shape.end());
    std::vector<py::ssize_t> strides(shape.size(), static_cast<py::ssize_t>(dtype_size(impl.type.dtype)));
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    return py::buffer_info(const_cast<void*>(impl.buffer->data()),
                           static_cast<py::ssize_t>(dtype_size(impl.type.dtype)), format,
                           static_cast<py::ssize_t>(shape.size()), shape, strides, /*readonly=*/true);
  });
  // pybind11 lets a C++ exception of the buffer callback unwind through
  // NumPy's C code (np.asarray of a tracer); the slot is wrapped so that it
  // becomes the Python exception kiln's translators make of it.
  auto* type = reinterpret_cast<PyTypeObject*>(array.ptr());
  pybind_getbuffer = type->tp_as_buffer->bf_getbuffer;
  type->tp_as_buffer->bf_getbuffer = translated_getbuffer;
}

}  // namespace kiln::python
