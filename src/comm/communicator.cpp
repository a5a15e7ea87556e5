// MPI behind kiln's collectives (see the header). Counts above INT_MAX go
// in several calls: MPI counts are ints.
#include "comm/communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/dispatch_queue.h"
#include "core/error_format.h"
#include "telemetry/timeline.h"

namespace kiln::comm {

namespace {

// A collective's span in the timeline, with the bytes this rank passes in;
// recorded in a world of one as well, where the collective copies locally.
void begin_collective_span(telemetry::timeline::Span& span, const char* name, int64_t bytes) {
  span.begin("collective", name, {{"bytes", bytes}, {"ranks", world().size}});
}

// Every rank makes its MPI calls in one order: a call from a user's thread
// (a barrier, the agreement on a new graph) comes after the collectives
// queued before it, which the dispatch thread makes.
std::mutex& mpi_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unique_lock<std::mutex> lock_mpi() {
  detail::wait_for_queued_work();
  return std::unique_lock(mpi_mutex());
}

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(variable)) return true;
  return false;
}

// The buffers reach here without the user's line: errors name the collective.
void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  detail::raise("distributed", std::string("MPI_") + what + " failed: " + std::string(text, length), Location(),
                "check that every rank was started by the same mpirun and calls the same collectives in order");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::bool_: return MPI_UINT8_T;
    case DType::i8: return MPI_INT8_T;
    case DType::i16: return MPI_INT16_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::u16: return MPI_UINT16_T;
    case DType::u32: return MPI_UINT32_T;
    case DType::u64: return MPI_UINT64_T;
    case DType::c64: return MPI_C_FLOAT_COMPLEX;
    case DType::c128: return MPI_C_DOUBLE_COMPLEX;
    case DType::f16:
    case DType::bf16: break;  // MPI has no 16-bit floats: reduced in f32 (reduction_dtype)
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_SUM;
}

// Mean is a sum divided by the world's size, in place.
void divide(void* data, int64_t count, DType dtype, int size) {
  if (dtype == DType::f32) {
    auto* values = static_cast<float*>(data);
    for (int64_t k = 0; k < count; ++k) values[k] /= static_cast<float>(size);
  } else if (dtype == DType::f64) {
    auto* values = static_cast<double*>(data);
    for (int64_t k = 0; k < count; ++k) values[k] /= static_cast<double>(size);
  } else if (dtype == DType::c64) {
    auto* values = static_cast<std::complex<float>*>(data);
    for (int64_t k = 0; k < count; ++k) values[k] /= static_cast<float>(size);
  } else if (dtype == DType::c128) {
    auto* values = static_cast<std::complex<double>*>(data);
    for (int64_t k = 0; k < count; ++k) values[k] /= static_cast<double>(size);
  }
}

constexpr int64_t chunk = INT_MAX / 8;  // elements per MPI call, whatever their size

// The dtype a reduction of `dtype` runs in through MPI. MPI has no 16-bit
// floats: f16 and bf16 reduce in f32, rounded back once. Open MPI's
// vectorized reductions (its op/avx component, 4.1) add 8- and 16-bit
// integers with saturation (open-mpi/ompi#8045), where kiln's sums wrap
// modulo 2^bits: such sums run in u32, whose wrapping sum has the same low bits.
DType reduction_dtype(DType dtype, ReduceOp op) {
  if (is_half(dtype)) return DType::f32;
  if (op == ReduceOp::sum && is_integer(dtype) && dtype_size(dtype) < sizeof(uint32_t)) return DType::u32;
  return dtype;
}

// Runs `reduce(wide_in, wide_out)` on copies of `in` converted to `wide`,
// then converts the result back into `out`.
template <class Reduce>
void through(DType wide, const void* in, int64_t in_count, void* out, int64_t out_count, DType dtype, Reduce reduce) {
  std::vector<char> wide_in(static_cast<size_t>(in_count) * dtype_size(wide));
  std::vector<char> wide_out(static_cast<size_t>(out_count) * dtype_size(wide));
  auto convert = [&]<class W>() {
    detail::dispatch(dtype, [&]<class T>() {
      auto* widened = reinterpret_cast<W*>(wide_in.data());
      for (int64_t k = 0; k < in_count; ++k) widened[k] = detail::convert_element<W>(static_cast<const T*>(in)[k]);
      reduce(wide_in.data(), wide_out.data());
      const auto* reduced = reinterpret_cast<const W*>(wide_out.data());
      for (int64_t k = 0; k < out_count; ++k) static_cast<T*>(out)[k] = detail::convert_element<T>(reduced[k]);
    });
  };
  if (wide == DType::f32) convert.template operator()<float>();
  else convert.template operator()<uint32_t>();
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

const World& world() {
  static const World state = [] {
    World world;
    if (!launched_by_mpi()) return world;
    int started = 0;
    MPI_Initialized(&started);
    if (!started) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "Init_thread");
      std::atexit([] {
        int finished = 0;
        MPI_Finalized(&finished);
        if (!finished) MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    world.launched = true;
    return world;
  }();
  return state;
}

void barrier() {
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording()) begin_collective_span(span, "barrier", 0);
  if (world().size == 1) return;
  std::unique_lock lock = lock_mpi();
  check(MPI_Barrier(MPI_COMM_WORLD), "Barrier");
}

void all_reduce(const void* in, void* out, int64_t count, DType dtype, ReduceOp op) {
  size_t element = dtype_size(dtype);
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording())
    begin_collective_span(span, "all_reduce", count * static_cast<int64_t>(element));
  if (world().size == 1) {
    if (in != out && count) std::memmove(out, in, static_cast<size_t>(count) * element);
    return;
  }
  if (DType wide = reduction_dtype(dtype, op); wide != dtype) {
    through(wide, in, count, out, count, dtype,
            [&](void* wide_in, void* wide_out) { all_reduce(wide_in, wide_out, count, wide, op); });
    return;
  }
  {
    std::unique_lock lock = lock_mpi();
    for (int64_t first = 0; first < count; first += chunk) {
      int n = static_cast<int>(std::min(chunk, count - first));
      const void* source = in == out ? MPI_IN_PLACE : static_cast<const char*>(in) + first * element;
      check(MPI_Allreduce(source, static_cast<char*>(out) + first * element, n, mpi_type(dtype), mpi_op(op),
                          MPI_COMM_WORLD),
            "Allreduce");
    }
  }
  if (op == ReduceOp::mean) divide(out, count, dtype, world().size);
}

void all_gather(const void* in, void* out, int64_t bytes) {
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording()) begin_collective_span(span, "all_gather", bytes);
  if (world().size == 1) {
    if (bytes) std::memmove(out, in, static_cast<size_t>(bytes));
    return;
  }
  if (bytes > INT_MAX)
    detail::raise("all_gather",
                  std::to_string(bytes) + " bytes per rank: MPI gathers at most 2 GiB per rank in one call", Location(),
                  "gather the array in pieces of at most 2 GiB per rank");
  std::unique_lock lock = lock_mpi();
  check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
        "Allgather");
}

void reduce_scatter(const void* in, void* out, int64_t count, DType dtype, ReduceOp op) {
  size_t element = dtype_size(dtype);
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording())
    begin_collective_span(span, "reduce_scatter", count * world().size * static_cast<int64_t>(element));
  if (world().size == 1) {
    if (count) std::memmove(out, in, static_cast<size_t>(count) * element);
    return;
  }
  if (count > INT_MAX)
    detail::raise("reduce_scatter",
                  std::to_string(count) + " elements per rank: MPI scatters at most 2^31 - 1 per rank in one call",
                  Location(), "reduce and scatter the array in pieces");
  if (DType wide = reduction_dtype(dtype, op); wide != dtype) {
    through(wide, in, count * world().size, out, count, dtype,
            [&](void* wide_in, void* wide_out) { reduce_scatter(wide_in, wide_out, count, wide, op); });
    return;
  }
  {
    std::unique_lock lock = lock_mpi();
    check(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD),
          "Reduce_scatter_block");
  }
  if (op == ReduceOp::mean) divide(out, count, dtype, world().size);
}

void broadcast(void* buffer, int64_t bytes, int root) {
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording()) begin_collective_span(span, "broadcast", bytes);
  if (world().size == 1) return;
  std::unique_lock lock = lock_mpi();
  for (int64_t first = 0; first < bytes; first += chunk)
    check(MPI_Bcast(static_cast<char*>(buffer) + first, static_cast<int>(std::min(chunk, bytes - first)), MPI_BYTE,
                    root, MPI_COMM_WORLD),
          "Bcast");
}

bool Intent::same_as(const Intent& other) const {
  return std::memcmp(operation, other.operation, sizeof operation) == 0 && setting == other.setting &&
         dtype == other.dtype && ndim == other.ndim && std::equal(dims, dims + max_dims, other.dims);
}

std::string Intent::text() const {
  std::string shape = "[";
  for (int32_t d = 0; d < std::min<int32_t>(ndim, static_cast<int32_t>(max_dims)); ++d)
    shape += (d ? "," : "") + std::to_string(dims[d]);
  if (ndim > static_cast<int32_t>(max_dims)) shape += ",...";
  return std::string(operation) + "(" + std::to_string(setting) + ") of " +
         std::string(dtype_name(static_cast<DType>(dtype))) + shape + "] at " + where + ":" + std::to_string(line);
}

std::vector<Intent> exchange(const Intent& mine) {
  std::vector<Intent> all(static_cast<size_t>(world().size));
  all_gather(&mine, all.data(), sizeof mine);
  return all;
}

std::vector<std::string> all_gather_text(const std::string& text) {
  const World& here = world();
  if (here.size == 1) return {text};
  auto length = static_cast<int64_t>(text.size());
  std::vector<int64_t> lengths(static_cast<size_t>(here.size));
  all_gather(&length, lengths.data(), sizeof length);
  int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = text;
  padded.resize(static_cast<size_t>(longest));
  std::string gathered(static_cast<size_t>(longest * here.size), '\0');
  all_gather(padded.data(), gathered.data(), longest);
  std::vector<std::string> texts;
  for (int r = 0; r < here.size; ++r)
    texts.push_back(gathered.substr(static_cast<size_t>(r * longest), static_cast<size_t>(lengths[r])));
  return texts;
}

}  // namespace kiln::comm
