// PTX for NVIDIA GPUs, checked where no GPU is: every kernel family of the
// fusion plans is lowered by LLVM's NVPTX backend (the module verified
// before and after optimizing), each kernel is one entry with the
// parameters the runtime passes, math without an NVPTX instruction is left
// to libdevice, and the target follows the GPU and its driver.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "backend/cuda/ptx.h"
#include "backend/llvm/plan.h"
#include "core/error_format.h"
#include "random_graph.h"
#include "support/errors.h"
#include "transform/simplify.h"

namespace kiln::testing {
namespace {

using cuda_backend::compile_ptx;
using cuda_backend::GpuTarget;
using cuda_backend::PtxModule;

struct Lowered {
  ir::Graph graph;
  llvm_backend::Plan plan;
  PtxModule module;
};

Lowered lower_for_gpu(const Graph& traced, const GpuTarget& target = {}) {
  Lowered lowered{detail::ir_of(traced), {}, {}};
  transform::simplify(lowered.graph);
  lowered.plan = llvm_backend::plan_graph(lowered.graph);
  lowered.module = compile_ptx(lowered.graph, lowered.plan, target, "test");
  return lowered;
}

template <class F, class... Args>
Lowered lower_function(F&& fn, const Args&... args) {
  return lower_for_gpu(trace_case("gpu", std::forward<F>(fn), args...).graph);
}

// The .param lines of one entry.
int entry_parameters(const std::string& ptx, const std::string& entry) {
  size_t at = ptx.find(".visible .entry " + entry + "(");
  if (at == std::string::npos) return -1;
  size_t end = ptx.find(')', at);
  std::string parameters = ptx.substr(at, end - at);
  int count = 0;
  for (size_t p = parameters.find(".param"); p != std::string::npos; p = parameters.find(".param", p + 1)) ++count;
  return count;
}

// Every kernel of the plan is an entry taking its constants, outputs and
// leaves, then range, chunk and output stride.
void expect_entries_match_plan(const Lowered& lowered) {
  const std::string& ptx = lowered.module.ptx;
  EXPECT_NE(ptx.find(".target " + lowered.module.target.architecture_name()), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".address_size 64"), std::string::npos);
  ASSERT_EQ(lowered.module.kernels.size(), lowered.plan.kernels.size());
  for (const cuda_backend::GpuKernel& kernel : lowered.module.kernels)
    EXPECT_EQ(entry_parameters(ptx, kernel.entry), 1 + kernel.output_count + kernel.leaf_count + 3)
        << kernel.entry << "\n"
        << ptx;
  // Each entry finds its first iteration from the block and thread indices.
  EXPECT_NE(ptx.find("%ctaid.x"), std::string::npos);
  EXPECT_NE(ptx.find("%tid.x"), std::string::npos);
}

int count_of(const std::string& text, const std::string& pattern) {
  std::regex expression(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), expression), std::sregex_iterator()));
}

Array normal(const Shape& shape, uint32_t seed = 1) { return random::normal(random::key(seed), shape); }

TEST(Ptx, AFusedElementwiseChainIsOneEntryReadingEachInputOnce) {
  Array x = normal({1 << 16}), y = normal({1 << 16}, 2);
  Lowered lowered =
      lower_function([](const Array& a, const Array& b) { return tanh(a * 2.0f + 1.0f) * b - exp(-a); }, x, y);
  ASSERT_EQ(lowered.plan.kernels.size(), 1u);
  expect_entries_match_plan(lowered);
  const cuda_backend::GpuKernel& kernel = lowered.module.kernels[0];
  EXPECT_EQ(kernel.range, 1 << 16);
  EXPECT_EQ(kernel.leaf_count, 2);
  EXPECT_FALSE(kernel.chunked);
  // The literals 2 and 1 are read from the constants, so kernels differing
  // only in numbers share code.
  EXPECT_GE(kernel.constants.size(), 2u);
  // kiln computes tanh and exp itself: nothing is left for libdevice.
  EXPECT_TRUE(lowered.module.libdevice_functions.empty());
  // Two f32 loads from global memory, one store; no CPU prefetching.
  EXPECT_EQ(count_of(lowered.module.ptx, "ld\\.global[.a-z]*\\.f32"), 2) << lowered.module.ptx;
  EXPECT_EQ(count_of(lowered.module.ptx, "st\\.global[.a-z]*\\.f32"), 1) << lowered.module.ptx;
  EXPECT_EQ(lowered.module.ptx.find("prefetch"), std::string::npos);
}

TEST(Ptx, RowReductionsAndSoftmaxLowerEveryKernel) {
  Array x = normal({64, 1024});
  Lowered softmax_rows = lower_function([](const Array& v) { return softmax(v, -1); }, x);
  EXPECT_GE(softmax_rows.plan.kernels.size(), 2u);
  expect_entries_match_plan(softmax_rows);
  // The row maxima and sums: one output element per iteration.
  int reductions = 0;
  for (size_t k = 0; k < softmax_rows.plan.kernels.size(); ++k)
    if (softmax_rows.plan.kernels[k].kind == llvm_backend::Kernel::Kind::reduce) {
      ++reductions;
      EXPECT_EQ(softmax_rows.module.kernels[k].range, 64);
    }
  EXPECT_EQ(reductions, 2);

  Lowered statistics = lower_function(
      [](const Array& v) {
        Array centered = v - mean(v, -1, true);
        return std::vector<Array>{max(v, -1), min(v, 0), sum(v * v, 0),
                                  centered * rsqrt(mean(square(centered), -1, true) + 1e-5f)};
      },
      x);
  expect_entries_match_plan(statistics);
}

TEST(Ptx, ColumnReductionsAccumulateInRegisters) {
  // A bias gradient's sum over the batch, and a maximum over it: each thread
  // keeps its output's accumulator in a register across the rows and stores
  // once, with no stack arrays (local memory) and no store inside the loop.
  Array x = normal({256, 512});
  for (bool maximum : {false, true}) {
    Lowered lowered =
        lower_function([maximum](const Array& v) { return maximum ? max(v * 2.0f, 0) : sum(v * 2.0f, 0); }, x);
    ASSERT_EQ(lowered.plan.kernels.size(), 1u);
    expect_entries_match_plan(lowered);
    EXPECT_EQ(lowered.module.kernels[0].range, 512);
    const std::string& ptx = lowered.module.ptx;
    EXPECT_EQ(ptx.find(".local"), std::string::npos) << ptx;
    EXPECT_EQ(count_of(ptx, "st\\.global[.a-z]*\\.f32"), 1) << ptx;
  }
}

TEST(Ptx, AReductionToOneValueRunsInSlicesWithAStridedOutput) {
  Array x = normal({1 << 18});
  Lowered lowered = lower_function([](const Array& v) { return sum(v * v); }, x);
  ASSERT_EQ(lowered.plan.kernels.size(), 1u);
  ASSERT_TRUE(lowered.plan.kernels[0].chunked);
  expect_entries_match_plan(lowered);
  EXPECT_TRUE(lowered.module.kernels[0].chunked);
  EXPECT_EQ(lowered.module.kernels[0].range, 1 << 18);
  // f32 sums accumulate in f64, as on the CPU.
  EXPECT_NE(lowered.module.ptx.find("add.rn.f64"), std::string::npos) << lowered.module.ptx;
}

TEST(Ptx, StandaloneKernelsLower) {
  Array x = normal({32, 48});
  Array indices = astype(arange(0, 32, 3), DType::i32);
  Lowered lowered = lower_function(
      [](const Array& v, const Array& i) {
        return std::vector<Array>{transpose(v) + 1.0f, concatenate({v, v * 2.0f}, 1),
                                  take(v, i, 0),       pad(v, {1, 2}, {3, 0}),
                                  cumsum(v, 1),        argmax(v, 1)};
      },
      x, indices);
  int standalone = 0;
  for (const llvm_backend::Kernel& kernel : lowered.plan.kernels)
    standalone += kernel.kind == llvm_backend::Kernel::Kind::standalone;
  EXPECT_GE(standalone, 5) << llvm_backend::describe(lowered.graph, lowered.plan);
  expect_entries_match_plan(lowered);
}

TEST(Ptx, RandomNumbersLowerToTheSameCounterBasedKernel) {
  Lowered lowered = lower_function(
      [](const Array& key) { return random::uniform(key, {4096}) + random::normal(key, {4096}); }, random::key(7));
  expect_entries_match_plan(lowered);
}

TEST(Ptx, SineCosineAndPowerAreLeftToLibdevice) {
  Array x = normal({4096}), y = normal({4096}, 2);
  Lowered single =
      lower_function([](const Array& a, const Array& b) { return sin(a) + cos(b) + pow(abs(a), b); }, x, y);
  expect_entries_match_plan(single);
  std::vector<std::string> expected{"__nv_cosf", "__nv_powf", "__nv_sinf"};
  std::vector<std::string> got = single.module.libdevice_functions;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  for (const std::string& function : expected)
    EXPECT_NE(single.module.ptx.find(".extern .func  (.param .b32 func_retval0) " + function), std::string::npos)
        << single.module.ptx;

  Lowered doubles = lower_function([](const Array& a) { return sin(a) * pow(a, 3.5); }, astype(x, DType::f64));
  got = doubles.module.libdevice_functions;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"__nv_pow", "__nv_sin"}));
}

TEST(Ptx, LibdeviceFunctionsAreLinkedInAndOnlyThoseCalled) {
  // A stand-in for libdevice.10.bc (textual IR parses alike): sinf as x - x^3/6
  // reading the reflect flag as libdevice does, and a function no kernel calls.
  std::filesystem::path library = std::filesystem::temp_directory_path() / "kiln_test_libdevice.ll";
  std::ofstream(library) << R"(
declare i32 @__nvvm_reflect(ptr)
@ftz = private unnamed_addr addrspace(1) constant [11 x i8] c"__CUDA_FTZ\00"
define float @__nv_sinf(float %x) {
  %flag = call i32 @__nvvm_reflect(ptr addrspacecast (ptr addrspace(1) @ftz to ptr))
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %t = fmul float %x3, 0x3FC5555560000000
  %r = fsub float %x, %t
  %ftz = icmp ne i32 %flag, 0
  %s = select i1 %ftz, float 0.0, float %r
  ret float %s
}
define float @__nv_unused_by_kernels(float %x) {
  ret float %x
}
)";
  Lowered traced = lower_function([](const Array& a) { return sin(a) * 3.0f; }, normal({256}));
  PtxModule linked = compile_ptx(traced.graph, traced.plan, GpuTarget{}, "test", library.string());
  std::filesystem::remove(library);
  EXPECT_TRUE(linked.libdevice_functions.empty());
  EXPECT_EQ(linked.ptx.find(".extern"), std::string::npos) << linked.ptx;
  EXPECT_EQ(linked.ptx.find("__nv_unused_by_kernels"), std::string::npos) << linked.ptx;
  // The reflect flag was answered (0: subnormals kept), so the select is gone.
  EXPECT_EQ(linked.ptx.find("__nvvm_reflect"), std::string::npos) << linked.ptx;
  EXPECT_NE(linked.ptx.find("0fBE2AAAAB"), std::string::npos) << linked.ptx;  // -1/6

  std::string missing =
      error_message([&] { compile_ptx(traced.graph, traced.plan, GpuTarget{}, "test", "/no/libdevice.bc"); });
  EXPECT_NE(missing.find("cannot read libdevice at '/no/libdevice.bc'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("KILN_LIBDEVICE"), std::string::npos) << missing;
}

TEST(Ptx, EveryDtypeLowers) {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                      DType::i64, DType::u32, DType::u64, DType::bool_}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Array x = astype(normal({16, 33}) * 4.0f, dtype);
    Lowered lowered = lower_function(
        [](const Array& a) {
          return std::vector<Array>{a + a, sum(a, -1), max(a, 0), astype(a, DType::f32) * 0.5f};
        },
        x);
    expect_entries_match_plan(lowered);
  }
}

TEST(Ptx, ASymbolicGraphReadsItsSizesFromTheConstants) {
  JitOptions options;
  options.dynamic_dims = {{0, 0}};
  auto row_sums = jit([](const Array& v) { return sum(exp(v), -1); }, options);
  Graph traced = row_sums.lower(normal({8, 100}));
  Lowered lowered = lower_for_gpu(traced);
  expect_entries_match_plan(lowered);
  // The row count is a symbol: the kernel's range is a polynomial in it.
  bool symbolic = false;
  for (const auto& factor : lowered.module.kernels[0].range_count.factors)
    symbolic = symbolic || !factor.size.is_constant();
  EXPECT_TRUE(symbolic);
}

TEST(Ptx, RandomGraphsLowerForTheGpu) {
  // The fuzzer's graphs mix every fusible primitive, broadcasting, dtypes and
  // reductions over any axes: each must lower and pass LLVM's verifier.
  int lowered_kernels = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    RandomGraph random = make_random_graph(seed);
    if (!random.test) continue;
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + random.recipe);
    Lowered lowered = lower_for_gpu(random.test->graph);
    if (lowered.plan.kernels.empty()) continue;
    expect_entries_match_plan(lowered);
    lowered_kernels += static_cast<int>(lowered.plan.kernels.size());
  }
  EXPECT_GT(lowered_kernels, 300);
}

TEST(Ptx, TheTargetFollowsTheGpuAndItsDriver) {
  // An H100 or H200 (9.0) under a CUDA 13 driver: the newest LLVM 16 makes.
  EXPECT_EQ(cuda_backend::gpu_target(9, 0, 13000), (GpuTarget{90, 78}));
  // A newer GPU runs sm_90 PTX, which its driver compiles for it.
  EXPECT_EQ(cuda_backend::gpu_target(10, 0, 12080), (GpuTarget{90, 78}));
  EXPECT_EQ(cuda_backend::gpu_target(8, 6, 11020), (GpuTarget{86, 71}));
  EXPECT_EQ(cuda_backend::gpu_target(8, 0, 11000), (GpuTarget{80, 70}));
  // An A100 under CUDA 10.2's driver cannot compile sm_80 code.
  std::string old_driver = error_message([] { cuda_backend::gpu_target(8, 0, 10020); });
  for (const char* part : {"[cuda]", "driver (version 10.2)", "ISA 6.5", "7.0 that sm_80", "update the NVIDIA driver"})
    EXPECT_NE(old_driver.find(part), std::string::npos) << part << " in " << old_driver;
  std::string old_gpu = error_message([] { cuda_backend::gpu_target(5, 2, 12000); });
  for (const char* part : {"[cuda]", "compute capability 5.2", "6.0"})
    EXPECT_NE(old_gpu.find(part), std::string::npos) << part << " in " << old_gpu;
  // Code for an older GPU, down to sm_60.
  Lowered lowered = lower_function([](const Array& a) { return a * a; }, normal({100}));
  Lowered pascal = lower_for_gpu(trace_case(
                                     "gpu", [](const Array& a) { return a * a; }, normal({100}))
                                     .graph,
                                 cuda_backend::gpu_target(6, 1, 12000));
  EXPECT_NE(pascal.module.ptx.find(".target sm_61"), std::string::npos) << pascal.module.ptx;
  EXPECT_NE(pascal.module.ptx.find(".version 5.0"), std::string::npos) << pascal.module.ptx;
  EXPECT_NE(lowered.module.ptx.find(".version 7.8"), std::string::npos) << lowered.module.ptx;
}

}  // namespace
}  // namespace kiln::testing
