// What an Array handle points at: an abstract value plus either a buffer
// (concrete array) or a position in a live trace (tracer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kiln/array.h"

namespace kiln::detail {

/// dtype + shape + weak flag: all a trace or a cache key knows of an array.
struct AbstractValue {
  DType dtype = DType::f32;
  bool weak = false;
  Shape shape;

  int64_t size() const { return shape_size(shape); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  /// The bytes a contiguous array of this type holds (its size was checked when allocated).
  size_t bytes() const { return static_cast<size_t>(size()) * dtype_size(dtype); }
  bool operator==(const AbstractValue& other) const = default;
  /// "f32[2,3]", with a trailing "~" for weakly typed values.
  std::string to_string() const;
};

/// Elements held on another device (a GPU). A buffer made from one is
/// device-resident: the host copy is made when the host first reads the
/// buffer (data()) and kept, so either side reads without copying again
/// (arrays never change once made).
class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;
  /// "cuda": what Array::device() reports.
  virtual std::string device() const = 0;
  virtual void copy_to_host(void* destination, size_t bytes) const = 0;
  /// Waits until the device has computed the elements.
  virtual void synchronize() const = 0;
};

/// Copies host bytes to `device`: the GPU backend's, installed at start-up
/// by the layer that holds it (cache/eager.cpp). Raises kiln::Error naming
/// `where` when the device is unknown or absent.
using DeviceUpload = std::shared_ptr<const DeviceStorage> (*)(const void* data, size_t bytes, const std::string& device,
                                                              Location where);
void install_device_upload(DeviceUpload upload);

/// Contiguous, 64-byte aligned, row-major storage. Small arrays live inside
/// the Buffer object itself, saving an allocation per scalar or short vector;
/// larger ones come from the caching allocator (core/allocator.h), so steady
/// state reuses warm blocks instead of faulting in fresh pages.
///
/// A buffer may also be *pending*: the result of work queued on kiln's
/// dispatch thread (core/dispatch_queue.h), whose storage arrives when that
/// work ends. Reading its storage (data(), lent()) waits until then on any
/// other thread, and rethrows the error the work raised; its size is known
/// from the start.
class Buffer {
 public:
  static constexpr size_t inline_bytes = 64;
  explicit Buffer(size_t bytes);
  /// Storage lent by another owner (a NumPy array, a DLPack tensor): kiln
  /// reads it in place and never writes or frees it; `owner` keeps it alive
  /// while any array uses it. It must be aligned for its elements.
  Buffer(void* data, size_t bytes, std::shared_ptr<const void> owner);
  struct Pending {};
  /// Storage of `bytes` that queued work will provide (fulfil) or fail to.
  Buffer(Pending, size_t bytes);
  /// Storage on another device, copied to the host when first read there.
  Buffer(std::shared_ptr<const DeviceStorage> storage, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() {
    if (state_.load(std::memory_order_acquire) != ready) [[unlikely]]
      wait();
    return data_;
  }
  const void* data() const { return const_cast<Buffer*>(this)->data(); }
  size_t bytes() const { return bytes_; }
  /// Lent storage is never taken over for a result (a donated argument's
  /// included), nor is storage shared with another buffer.
  /// Storage on a device is shared with it, which may read it again.
  bool lent() const {
    if (state_.load(std::memory_order_acquire) != ready) [[unlikely]]
      const_cast<Buffer*>(this)->wait_for_work();
    return device_ != nullptr || owner_ != nullptr || source_ != nullptr;
  }
  /// The device holding the elements, or null for host memory (a pending
  /// buffer's: once its work has run).
  const std::shared_ptr<const DeviceStorage>& device_storage() const {
    if (state_.load(std::memory_order_acquire) == waiting) [[unlikely]]
      const_cast<Buffer*>(this)->wait_for_work();
    return device_;
  }
  /// Storage another library owns (a NumPy array): it may change after a
  /// call returns, so work queued for later copies it first.
  bool from_outside() const { return owner_ != nullptr; }
  /// Queued work has not provided the storage yet (it may have failed).
  bool pending() const { return state_.load(std::memory_order_acquire) == waiting; }
  /// Waits for a pending buffer's storage (a device-resident buffer's: its
  /// host copy); rethrows the error of the work that was to provide it.
  void wait();
  /// Waits for the work queued to provide the storage, wherever it is
  /// (a device-resident buffer stays on its device); rethrows its error.
  void wait_for_work();

  /// The dispatch thread: `result`'s storage becomes this pending buffer's
  /// (taken over when nothing else refers to it, else shared), and threads
  /// waiting for it go on. The sizes must be equal.
  void fulfil(std::shared_ptr<Buffer> result);
  /// The dispatch thread: the work failed; readers rethrow `error`.
  void fail(std::exception_ptr error);

 private:
  enum State : uint8_t { ready, waiting, failed, on_device };
  void* inline_data();
  void copy_from_device();

  // Over-aligning the object itself would send every allocation through
  // aligned operator new (memalign), which costs far more than the padding.
  static constexpr size_t alignment = 64;
  std::byte inline_[inline_bytes + alignment - alignof(std::max_align_t)];
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<Buffer> source_;  // a fulfilled buffer sharing another's storage
  std::shared_ptr<const DeviceStorage> device_;
  std::exception_ptr error_;
  std::atomic<uint8_t> state_{ready};
};

/// What an array knows of the trace that recorded it: enough for any layer to
/// report a leaked or concretized tracer. The trace layer's TraceState
/// extends it with the graph being recorded.
struct TraceContext {
  std::string name;  // the traced function
  Location where;    // where the trace began
  bool alive = true;
  // While a function is traced with dynamic dimensions: each C++ read of a
  // tracer's shape (the shape read, the user's line), which explanations
  // name. Traces nested in that one (grad, vmap, control flow bodies) add to
  // the same record.
  std::shared_ptr<std::vector<std::pair<Shape, Location>>> shape_reads;
};

struct ArrayImpl {
  // User-provided, so make_shared's value-initialization runs it without
  // first zero-filling the object: a tracer is made per recorded operation.
  ArrayImpl() {}

  AbstractValue type;
  std::shared_ptr<Buffer> buffer;       // concrete arrays
  std::shared_ptr<TraceContext> trace;  // tracers
  int32_t value = -1;                   // tracers: node id in the trace's graph
  // Set when the array was donated to a jitted call: the message for a later use.
  std::shared_ptr<const std::string> donated_to;
  // Concrete arrays made from host data while a trace was active: that trace.
  // Inside it (or an enclosing one) the array is a constant of the graph, not
  // state the function reads.
  std::shared_ptr<TraceContext> made_during;

  template <class T>
  const T* data() const {
    return static_cast<const T*>(buffer->data());
  }
  template <class T>
  T* mutable_data() {
    return static_cast<T*>(buffer->data());
  }
};

/// The library's access to what a handle points at, which the public header
/// keeps from users (Array befriends this struct and nothing else).
struct ArrayAccess {
  static const std::shared_ptr<ArrayImpl>& impl(const Array& array) { return array.impl_; }
  static Array wrap(std::shared_ptr<ArrayImpl> impl) { return Array(std::move(impl)); }
};
/// What `array` points at: null for an empty handle, and a donated array's
/// impl too (impl_of checks both).
inline const std::shared_ptr<ArrayImpl>& impl(const Array& array) { return ArrayAccess::impl(array); }
/// A handle to `impl`.
inline Array wrap(std::shared_ptr<ArrayImpl> impl) { return ArrayAccess::wrap(std::move(impl)); }

/// The innermost trace active on this thread, as the trace layer reports it
/// (set_active_trace), so that arrays made from host data remember it.
const std::shared_ptr<TraceContext>& active_trace();
void set_active_trace(std::shared_ptr<TraceContext> context);

/// Throws LeakedTracerError for a tracer whose trace ended (or that belongs to
/// a trace on another thread); `operation` and `use` say where it was used.
[[noreturn]] void raise_leaked(const ArrayImpl& tracer, const char* operation, Location use);

/// Throws kiln::Error naming `operation`, the shape and `where` when `type`
/// has a negative extent or more elements or bytes than one array may hold,
/// so no size computed from it overflows.
/// `input` (optional) says what the result was made from.
void check_fits(const AbstractValue& type, const char* operation, Location where, const AbstractValue* input = nullptr);
/// A fresh concrete array with uninitialized storage for `type`. Throws
/// AllocationError when the memory cannot be had; its refusal() lets the
/// operation that asked name itself (ops::apply does).
Array allocate(AbstractValue type);
/// An array whose storage work queued on the dispatch thread provides
/// (Buffer::fulfil); reading it waits. `type` fits (check_fits).
Array pending_array(AbstractValue type);
/// What queued work keeps of an array it computes: the storage to fulfil
/// and the type it must have. The caller's handle may change meanwhile (a
/// later call taking its storage as a donated argument).
struct PendingResult {
  std::shared_ptr<Buffer> buffer;
  AbstractValue type;
};
PendingResult pending_result(const Array& pending);
/// The dispatch thread: the pending storage takes `computed`'s. Throws
/// kiln::Error if the types differ (a kiln bug).
void fulfil(const PendingResult& pending, Array computed);
/// What queued work holds of an array it reads: a handle of its own to the
/// same storage, so the dispatch thread never touches the caller's handles
/// (which a later call may mark donated meanwhile). `take` moves the
/// storage out of the caller's handle, which the call marks donated: the
/// work may then overwrite it, as a call run at once does.
Array queued_handle(const Array& array, bool take = false);
/// Work queued for later must not read storage that another library may
/// change after the call returns (a NumPy array kiln borrows): such inputs
/// up to a mebibyte are replaced by copies. Returns false when a larger one
/// remains, and the caller runs the work at once instead.
bool copy_outside_storage_for_queue(std::span<Array> inputs);
/// A concrete array with its own copy of `array`'s storage.
Array copy_of(const Array& array);
/// The impl of a handle, throwing a readable error for an empty or donated one.
const ArrayImpl& impl_of_checked(const Array& array, const char* operation, Location where);
inline const ArrayImpl& impl_of(const Array& array, const char* operation, Location where) {
  const ArrayImpl* impl = ArrayAccess::impl(array).get();
  if (impl && !impl->donated_to) [[likely]]
    return *impl;
  return impl_of_checked(array, operation, where);
}

}  // namespace kiln::detail
