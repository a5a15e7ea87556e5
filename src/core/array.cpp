// Array handles, buffers, element access and printing.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <utility>

#include "core/allocation_guard.h"
#include "core/allocator.h"
#include "core/array_impl.h"
#include "core/convert.h"
#include "core/dispatch.h"
#include "core/dispatch_queue.h"
#include "core/error_format.h"
#include "core/location_scope.h"

namespace kiln {
namespace detail {

std::string AbstractValue::to_string() const {
  return std::string(dtype_name(dtype)) + shape_string(shape) + (weak ? "~" : "");
}

void* Buffer::inline_data() {
  auto address = reinterpret_cast<uintptr_t>(inline_);
  return inline_ + ((alignment - address % alignment) % alignment);
}

Buffer::Buffer(size_t bytes) : bytes_(bytes) {
  data_ = bytes <= inline_bytes ? inline_data() : allocator::allocate(bytes);
}

Buffer::Buffer(void* data, size_t bytes, std::shared_ptr<const void> owner)
    : data_(data), bytes_(bytes), owner_(std::move(owner)) {}

Buffer::Buffer(Pending, size_t bytes) : bytes_(bytes), state_(waiting) {}

Buffer::Buffer(std::shared_ptr<const DeviceStorage> storage, size_t bytes)
    : bytes_(bytes), device_(std::move(storage)), state_(on_device) {}

Buffer::~Buffer() {
  if (!owner_ && !source_ && data_ && bytes_ > inline_bytes) allocator::deallocate(data_, bytes_);
}

void Buffer::wait() {
  wait_for_work();
  if (state_.load(std::memory_order_acquire) == on_device) copy_from_device();
}

void Buffer::copy_from_device() {
  // Rare (once per array read on the host): one lock for all buffers.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (state_.load(std::memory_order_acquire) != on_device) return;
  void* host = bytes_ <= inline_bytes ? inline_data() : allocator::allocate(bytes_);
  device_->copy_to_host(host, bytes_);
  data_ = host;
  state_.store(ready, std::memory_order_release);
}

void Buffer::wait_for_work() {
  for (;;) {
    uint8_t state = state_.load(std::memory_order_acquire);
    if (state == ready || state == on_device) return;
    if (state == failed) std::rethrow_exception(error_);
    // Work on the dispatch thread runs in the order it was queued, so what it
    // reads is ready: waiting there would wait forever.
    if (on_dispatch_thread())
      throw Error(
          "kiln: queued work read an array that no earlier work computes (a kiln bug; "
          "KILN_DISPATCH=sync avoids it)");
    blocking_wait([&] { state_.wait(state, std::memory_order_acquire); });
  }
}

void Buffer::fulfil(std::shared_ptr<Buffer> result) {
  result->wait_for_work();
  if (result->bytes_ != bytes_)
    throw Error("kiln: queued work computed " + std::to_string(result->bytes_) + " bytes for an array of " +
                std::to_string(bytes_) + " (a kiln bug; KILN_DISPATCH=sync avoids it)");
  if (result->device_) {
    // Stays on its device: this buffer shares it, and its host copy when made.
    device_ = result->device_;
    state_.store(on_device, std::memory_order_release);
    state_.notify_all();
    return;
  }
  // Taken over only when no other array can read it: the result's own handle
  // is the last one. Shared otherwise (an argument returned as it is, storage
  // a donated argument gave), and then never written, like lent storage.
  if (result.use_count() == 1 && !result->lent()) {
    if (bytes_ <= inline_bytes) {
      data_ = inline_data();
      std::memcpy(data_, result->data_, bytes_);
    } else {
      data_ = std::exchange(result->data_, nullptr);
    }
  } else {
    data_ = result->data_;
    source_ = std::move(result);
  }
  state_.store(ready, std::memory_order_release);
  state_.notify_all();
}

void Buffer::fail(std::exception_ptr error) {
  error_ = std::move(error);
  state_.store(failed, std::memory_order_release);
  state_.notify_all();
}

namespace {
// One array's largest size: the caching allocator's largest block, far below
// where any element or byte count overflows.
constexpr uint64_t max_array_bytes = allocator::max_block_bytes;

// The bytes of `type`, or 0 with `why` set when they do not fit.
uint64_t checked_bytes(const AbstractValue& type, std::string& why) {
  uint64_t elements = 1;
  for (int64_t extent : type.shape) {
    if (extent < 0) {
      why = "has a negative extent";
      return 0;
    }
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(extent), &elements) || elements > (uint64_t{1} << 62)) {
      // A later zero extent would make the product 0, but every size
      // computed on the way must fit too.
      why = "has more elements than fit in a 64-bit count";
      return 0;
    }
  }
  uint64_t bytes = 0;
  bool overflowed = __builtin_mul_overflow(elements, uint64_t{dtype_size(type.dtype)}, &bytes);
  if (overflowed || bytes > max_array_bytes) {
    why = overflowed ? "needs more than 2^64 bytes, more than one array may hold (2^46)"
                     : "needs " + std::to_string(bytes) + " bytes, more than one array may hold (2^46)";
    return 0;
  }
  return bytes;
}
}  // namespace

void check_fits(const AbstractValue& type, const char* operation, Location where, const AbstractValue* input) {
  std::string why;
  checked_bytes(type, why);
  if (!why.empty())
    raise<AllocationError>(
        operation,
        "the result " + type.to_string() + (input ? " (from " + input->to_string() + ")" : std::string()) + " " + why,
        where, "check the shape: an extent may have come from an uninitialized or overflowed value");
}

Array allocate(AbstractValue type) {
  std::string why;
  uint64_t bytes = checked_bytes(type, why);
  auto impl = std::make_shared<ArrayImpl>();
  try {
    if (!why.empty()) throw std::bad_alloc();
    impl->buffer = std::make_shared<Buffer>(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc&) {
    // Formatted only when refused: allocate runs for every eager result.
    std::string refusal =
        why.empty() ? "the system refused " + std::to_string(bytes) + " bytes for an array " + type.to_string()
                    : "an array " + type.to_string() + " " + why;
    throw AllocationError(format_error("allocate", refusal, Location(), allocation_hint), refusal);
  }
  impl->type = std::move(type);
  return detail::wrap(std::move(impl));
}

Array pending_array(AbstractValue type) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->buffer = std::make_shared<Buffer>(Buffer::Pending{}, type.bytes());
  impl->type = std::move(type);
  return wrap(std::move(impl));
}

PendingResult pending_result(const Array& pending) { return {impl(pending)->buffer, impl(pending)->type}; }

void fulfil(const PendingResult& pending, Array computed) {
  const ArrayImpl& result = *impl(computed);
  if (result.type.dtype != pending.type.dtype || result.type.shape != pending.type.shape)
    throw Error("kiln: queued work computed " + result.type.to_string() + " for an array of " +
                pending.type.to_string() + " (a kiln bug; KILN_DISPATCH=sync avoids it)");
  std::shared_ptr<Buffer> storage = result.buffer;
  // The result's handle goes first: the storage is then taken over when no
  // other array holds it.
  computed = Array();
  pending.buffer->fulfil(std::move(storage));
}

Array queued_handle(const Array& array, bool take) {
  const std::shared_ptr<ArrayImpl>& original = impl(array);
  auto handle = std::make_shared<ArrayImpl>();
  handle->type = original->type;
  handle->made_during = original->made_during;
  handle->buffer = take ? std::move(original->buffer) : original->buffer;
  return wrap(std::move(handle));
}

bool copy_outside_storage_for_queue(std::span<Array> inputs) {
  constexpr size_t largest_copy = size_t{1} << 20;
  for (Array& input : inputs) {
    const Buffer& buffer = *impl(input)->buffer;
    if (!buffer.from_outside()) continue;
    if (buffer.bytes() > largest_copy) return false;
    input = copy_of(input);
  }
  return true;
}

Array copy_of(const Array& array) {
  Array result = allocate(detail::impl(array)->type);
  if (detail::impl(result)->buffer->bytes() > 0)
    std::memcpy(detail::impl(result)->buffer->data(), detail::impl(array)->buffer->data(),
                detail::impl(result)->buffer->bytes());
  return result;
}

const ArrayImpl& impl_of_checked(const Array& array, const char* operation, Location where) {
  if (!detail::impl(array))
    raise(operation, "an empty (default-constructed) Array was used", where,
          "assign an array to it before use, e.g. kiln::zeros({...})");
  if (detail::impl(array)->donated_to)
    raise<DonatedArrayError>(operation,
                             "array " + detail::impl(array)->type.to_string() + " was donated to " +
                                 *detail::impl(array)->donated_to + " and may no longer be used",
                             where, "use the function's result instead, or remove the argument from donate_argnums");
  return *detail::impl(array);
}

void raise_leaked(const ArrayImpl& tracer, const char* operation, Location use) {
  const TraceContext& trace = *tracer.trace;
  std::string message = "a traced value " + tracer.type.to_string() + " (%" + std::to_string(tracer.value) +
                        " of the trace of '" + trace.name + "' begun at " + location_string(trace.where) +
                        ") was used ";
  message += trace.alive ? "outside that trace, on another thread" : "after that trace ended";
  raise<LeakedTracerError>(operation, message, use,
                           "return the value from the traced function instead of storing it in a global, "
                           "a member or a by-reference capture");
}

namespace {
thread_local std::shared_ptr<TraceContext> active_trace_context;
}  // namespace

const std::shared_ptr<TraceContext>& active_trace() { return active_trace_context; }
void set_active_trace(std::shared_ptr<TraceContext> context) { active_trace_context = std::move(context); }

// The untyped work of Array::item, Array::to_vector and kiln::array.
namespace {
int64_t element_count(const Array& array, const char* operation, Location where) {
  return impl_of(array, operation, where).type.size();
}

void read_elements(const Array& array, DType as, void* out, int64_t count, const char* operation, Location where) {
  const ArrayImpl& impl = impl_of(array, operation, where);
  if (impl.trace) {
    const TraceContext& trace = *impl.trace;
    if (!trace.alive) raise_leaked(impl, operation, where);
    raise<ConcretizationError>(
        operation,
        "cannot read the value of traced array " + impl.type.to_string() + " inside the trace of '" + trace.name +
            "' (begun at " + location_string(trace.where) + ")",
        where,
        trace.name.starts_with("vmap")
            ? "inside vmap every lane has its own value, so C++ code cannot branch on it or read it: use "
              "kiln::where for a choice of values, kiln::cond or kiln::while_loop for a choice of code (vmap batches "
              "both), or pass the value as a static (non-Array) argument"
            : "a traced value is known only when the compiled code runs: use kiln::where for a data-dependent "
              "choice of values, kiln::cond or kiln::while_loop for a choice of code, or pass the value as a static "
              "(non-Array) argument");
  }
  if (std::string_view(operation) == "item" && impl.type.size() != 1)
    raise(operation, "needs exactly one element, got " + impl.type.to_string(), where,
          "index or reduce the array first (e.g. kiln::sum)");
  if (is_complex(impl.type.dtype) && !is_complex(as))
    raise(operation,
          "would drop the imaginary part of " + impl.type.to_string() + " reading it as " + std::string(dtype_name(as)),
          where,
          "read it as std::complex<" + std::string(impl.type.dtype == DType::c64 ? "float" : "double") +
              ">, or take kiln::real(x) or kiln::abs(x) first");
  dispatch(impl.type.dtype, [&]<class From>() {
    const From* source = impl.data<From>();
    dispatch(as, [&]<class To>() {
      To* target = static_cast<To*>(out);
      for (int64_t i = 0; i < count; ++i) target[i] = convert_element<To, From>(source[i]);
    });
  });
}

/// Copies `count` elements of `dtype` from `data`; throws unless they fill `shape`.
Array make_array(const void* data, int64_t count, DType dtype, Shape shape, Location where) {
  for (int64_t extent : shape)
    if (extent < 0) raise("array", "negative dimension in shape " + shape_string(shape), where);
  check_fits(AbstractValue{dtype, false, shape}, "array", where);
  if (count != shape_size(shape))
    raise("array",
          std::to_string(count) + " values do not fill shape " + shape_string(shape) + " (" +
              std::to_string(shape_size(shape)) + " elements)",
          where, "pass exactly as many values as the shape holds");
  Array result = allocate(AbstractValue{dtype, false, std::move(shape)});
  if (count > 0) std::memcpy(detail::impl(result)->buffer->data(), data, detail::impl(result)->buffer->bytes());
  detail::impl(result)->made_during = active_trace();
  return result;
}
}  // namespace

}  // namespace detail

DType Array::dtype(Location where) const { return detail::impl_of(*this, "dtype", where).type.dtype; }
const Shape& Array::shape(Location where) const {
  const detail::ArrayImpl& impl = detail::impl_of(*this, "shape", where);
  // Inside a composite or a derivative or batching rule, the read is the user's call's.
  if (impl.trace && impl.trace->shape_reads)
    impl.trace->shape_reads->emplace_back(impl.type.shape, detail::scoped_location(where));
  return impl.type.shape;
}
int64_t Array::ndim(Location where) const { return static_cast<int64_t>(shape(where).size()); }
int64_t Array::size(Location where) const { return shape_size(shape(where)); }
bool Array::weak_type(Location where) const { return detail::impl_of(*this, "weak_type", where).type.weak; }
bool Array::is_tracer() const { return impl_ && impl_->trace != nullptr; }

const Array& Array::block_until_ready(Location where) const {
  const detail::ArrayImpl& impl = detail::impl_of(*this, "block_until_ready", where);
  if (!impl.buffer) return *this;
  impl.buffer->wait_for_work();
  if (const auto& storage = impl.buffer->device_storage()) storage->synchronize();
  return *this;
}

std::string Array::device(Location where) const {
  const detail::ArrayImpl& impl = detail::impl_of(*this, "device", where);
  if (!impl.buffer) return "cpu";  // a tracer: where it runs is the jitted function's choice
  const auto& storage = impl.buffer->device_storage();
  return storage ? storage->device() : "cpu";
}

namespace detail {
namespace {
std::atomic<DeviceUpload> installed_upload{nullptr};
}  // namespace

void install_device_upload(DeviceUpload upload) { installed_upload.store(upload); }
}  // namespace detail

Array to_device(const Array& x, const std::string& device, Location where) {
  const detail::ArrayImpl& impl = detail::impl_of(x, "to_device", where);
  if (!impl.buffer)
    detail::raise("to_device", "cannot move a traced value (" + impl.type.to_string() + ") between devices", where,
                  "inside a jitted function, JitOptions::device decides where values live");
  if (x.device(where) == device) return x;
  if (device == "cpu") return detail::copy_of(x);
  auto moved = std::make_shared<detail::ArrayImpl>();
  moved->type = impl.type;
  size_t bytes = impl.type.bytes();
  detail::DeviceUpload upload = detail::installed_upload.load();
  if (!upload)
    detail::raise("to_device", "no device but \"cpu\" is linked into this program (" + impl.type.to_string() + ")",
                  where, "link kiln::kiln, whose cache layer connects the GPU backend");
  moved->buffer = std::make_shared<detail::Buffer>(upload(impl.buffer->data(), bytes, device, where), bytes);
  return detail::wrap(std::move(moved));
}

void synchronize() { detail::synchronize_queue(); }

int64_t Array::shape(int64_t axis, Location where) const {
  int64_t rank = ndim(where);
  if (axis < -rank || axis >= rank)
    detail::raise(
        "shape",
        "axis " + std::to_string(axis) + " is out of range for an array of shape " + shape_string(shape(where)), where);
  return shape(where)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
}

template <Element T>
T Array::item(Location where) const {
  T value{};
  detail::read_elements(*this, dtype_of<T>(), &value, 1, "item", where);
  return value;
}

template <Element T>
std::vector<T> Array::to_vector(Location where) const {
  std::vector<T> values(static_cast<size_t>(detail::element_count(*this, "to_vector", where)));
  if constexpr (std::is_same_v<T, bool>) {
    std::unique_ptr<bool[]> flat(new bool[values.size()]);
    detail::read_elements(*this, DType::bool_, flat.get(), std::ssize(values), "to_vector", where);
    for (size_t i = 0; i < values.size(); ++i) values[i] = flat[i];
  } else {
    detail::read_elements(*this, dtype_of<T>(), values.data(), std::ssize(values), "to_vector", where);
  }
  return values;
}

template <Element T>
Array array(const std::vector<T>& data, Shape shape, Location where) {
  auto count = static_cast<int64_t>(data.size());
  if constexpr (std::is_same_v<T, bool>) {
    std::unique_ptr<bool[]> flat(new bool[data.size()]);
    for (size_t i = 0; i < data.size(); ++i) flat[i] = data[i];
    return detail::make_array(flat.get(), count, DType::bool_, std::move(shape), where);
  } else {
    return detail::make_array(data.data(), count, dtype_of<T>(), std::move(shape), where);
  }
}

// The public header declares these templates; every Element type is compiled here.
#define KILN_ELEMENT_ACCESS(T)                                 \
  template T Array::item<T>(Location) const;                   \
  template std::vector<T> Array::to_vector<T>(Location) const; \
  template Array array<T>(const std::vector<T>&, Shape, Location);
KILN_ELEMENT_ACCESS(bool)
KILN_ELEMENT_ACCESS(int8_t)
KILN_ELEMENT_ACCESS(int16_t)
KILN_ELEMENT_ACCESS(int32_t)
KILN_ELEMENT_ACCESS(int64_t)
KILN_ELEMENT_ACCESS(uint8_t)
KILN_ELEMENT_ACCESS(uint16_t)
KILN_ELEMENT_ACCESS(uint32_t)
KILN_ELEMENT_ACCESS(uint64_t)
KILN_ELEMENT_ACCESS(float16)
KILN_ELEMENT_ACCESS(bfloat16)
KILN_ELEMENT_ACCESS(float)
KILN_ELEMENT_ACCESS(double)
KILN_ELEMENT_ACCESS(std::complex<float>)
KILN_ELEMENT_ACCESS(std::complex<double>)
#undef KILN_ELEMENT_ACCESS

namespace {
template <class T>
void print_element(std::ostream& out, T value) {
  if constexpr (std::is_same_v<T, bool>) out << (value ? "true" : "false");
  else if constexpr (HalfFloat<T>) out << static_cast<float>(value);
  else if constexpr (sizeof(T) == 1) out << static_cast<int>(value);  // not as a character
  else if constexpr (detail::is_complex_element<T>) {
    // NumPy's spelling: 1+2j, 0-1j.
    out << value.real() << (std::signbit(value.imag()) ? "-" : "+") << std::abs(value.imag()) << "j";
  } else out << value;
}

template <class T>
void print_nested(std::ostream& out, const T* data, const Shape& shape, size_t axis, int64_t& offset) {
  constexpr int64_t edge = 3;  // elements shown at each end of a long axis
  if (axis == shape.size()) {
    print_element(out, data[offset++]);
    return;
  }
  int64_t inner = 1;
  for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  out << "[";
  for (int64_t i = 0; i < shape[axis]; ++i) {
    if (shape[axis] > 2 * edge + 1 && i == edge) {
      out << ", ...";
      offset += inner * (shape[axis] - 2 * edge);
      i = shape[axis] - edge - 1;
      continue;
    }
    if (i) out << ", ";
    print_nested(out, data, shape, axis + 1, offset);
  }
  out << "]";
}
}  // namespace

std::ostream& operator<<(std::ostream& out, const Array& array) {
  if (!detail::impl(array)) return out << "Array(empty)";
  // A donated array's memory may hold another array's values now: printing
  // it is a use like any other. (operator<< has no location to name.)
  const detail::ArrayImpl& impl = detail::impl_of(array, "print", Location());
  if (impl.trace) return out << "Tracer(%" << impl.value << ": " << impl.type.to_string() << ")";
  std::ostringstream text;
  text.precision(7);
  detail::dispatch(impl.type.dtype, [&]<class T>() {
    int64_t offset = 0;
    print_nested(text, impl.data<T>(), impl.type.shape, 0, offset);
  });
  return out << "array(" << text.str() << ", " << impl.type.to_string() << ")";
}

}  // namespace kiln
