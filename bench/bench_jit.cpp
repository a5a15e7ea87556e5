// Cost of the jit cache itself, side by side with libtorch eager:
//   a jitted x + 1 on f32[8] (whole call)      goal <= 0.15 of libtorch eager x + 1
//   a jitted 4-argument function of f32[8]      goal <= 1/4 of libtorch eager, same ops
//   tracing, per recorded operation             goal <= 0.15 us
//   re-trace + lookup of a 1,000-node stateful function   goal <= 0.2 ms
//   the jitted x + 1 with the structured trace on (KILN_TRACE)   goal <= 1.10 of it off
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <filesystem>

#include "cache/compile_trace.h"
#include "harness.h"

namespace {
using kiln::Array;

constexpr int chain_length = 1000;

Array chain(const Array& x, const Array& w) {
  Array y = x;
  for (int i = 0; i < chain_length / 2; ++i) y = y * w + x;  // two nodes per step
  return y;
}
}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  Array x = kiln::full({8}, 1.5f);
  Array b = kiln::full({8}, 2.0f), c = kiln::full({8}, 0.5f), d = kiln::full({8}, -1.0f);
  torch::Tensor tx = torch::full({8}, 1.5f), tb = torch::full({8}, 2.0f), tc = torch::full({8}, 0.5f),
                td = torch::full({8}, -1.0f);

  auto plus_one = kiln::jit([](const Array& v) { return v + 1.0f; }, {.name = "plus_one"});
  auto four =
      kiln::jit([](const Array& p, const Array& q, const Array& r, const Array& s) { return (p * q + r) * s - p; },
                {.name = "four"});
  kiln::bench::add("kiln jit x+1 f32[8]", [&] { benchmark::DoNotOptimize(plus_one(x)); });
  kiln::bench::add("torch eager x+1 f32[8]", [&] { benchmark::DoNotOptimize(tx + 1); });
  kiln::bench::add("kiln eager x+1 f32[8]", [&] { benchmark::DoNotOptimize(x + 1.0f); });
  // The structured trace's file stays open for the whole run; only this
  // row's calls see it running, so that every other row runs untraced.
  std::string trace_directory = (std::filesystem::temp_directory_path() / "kiln-bench-jit-trace").string();
  kiln::telemetry::start_trace(trace_directory);
  kiln::cache::trace_detail::running.store(false);
  auto traced_plus_one = kiln::jit([](const Array& v) { return v + 1.0f; }, {.name = "traced_plus_one"});
  kiln::bench::add("kiln jit x+1 f32[8], trace on", [&] {
    kiln::cache::trace_detail::running.store(true, std::memory_order_relaxed);
    benchmark::DoNotOptimize(traced_plus_one(x));
    kiln::cache::trace_detail::running.store(false, std::memory_order_relaxed);
  });
  kiln::bench::add("kiln jit 4-arg f32[8]", [&] { benchmark::DoNotOptimize(four(x, b, c, d)); });
  kiln::bench::add("torch eager 4-arg f32[8]", [&] { benchmark::DoNotOptimize((tx * tb + tc) * td - tx); });

  kiln::bench::add("kiln trace 1000-node function", [&] {
    benchmark::DoNotOptimize(kiln::make_graph(
        "chain", [&](const Array& v) { return chain(v, b); }, x));
  });

  // The same 1,000-node graph, stateful (re-traced each call) and captureless
  // (signature hit): the difference is re-trace + lookup.
  Array captured_w = b;
  auto stateful = kiln::jit([&](const Array& v) { return chain(v, captured_w); }, {.name = "stateful"});
  auto captureless = kiln::jit([](const Array& v, const Array& w) { return chain(v, w); }, {.name = "captureless"});
  kiln::bench::add("kiln jit stateful 1000-node call", [&] { benchmark::DoNotOptimize(stateful(x)); });
  kiln::bench::add("kiln jit captureless 1000-node call",
                   [&] { benchmark::DoNotOptimize(captureless(x, captured_w)); });

  kiln::bench::run_all(argc, argv);

  std::printf("\n== jit cache overhead (ratios of time per call; lower is better) ==\n");
  kiln::bench::compare("jitted x+1 f32[8] vs libtorch eager x+1", "kiln jit x+1 f32[8]", "torch eager x+1 f32[8]", 0.15,
                       "0.15 of libtorch");
  kiln::bench::compare("jitted x+1 f32[8], structured trace on vs off", "kiln jit x+1 f32[8], trace on",
                       "kiln jit x+1 f32[8]", 1.10, "10% more");
  kiln::telemetry::stop_trace();
  std::filesystem::remove_all(trace_directory);
  kiln::bench::compare("eager x+1 f32[8] vs libtorch eager x+1", "kiln eager x+1 f32[8]", "torch eager x+1 f32[8]", 0.5,
                       "1/2 of libtorch");
  kiln::bench::compare("jitted 4-arg f32[8] vs libtorch eager", "kiln jit 4-arg f32[8]", "torch eager 4-arg f32[8]",
                       0.25, "1/4 of libtorch");
  if (kiln::bench::ran("kiln trace 1000-node function")) {
    auto t = kiln::bench::timing("kiln trace 1000-node function");
    kiln::bench::absolute("tracing, per recorded operation", t.min_seconds / chain_length,
                          t.median_seconds / chain_length, 0.15e-6, "operation");
  }
  if (kiln::bench::ran("kiln jit stateful 1000-node call") && kiln::bench::ran("kiln jit captureless 1000-node call")) {
    auto s = kiln::bench::timing("kiln jit stateful 1000-node call");
    auto c = kiln::bench::timing("kiln jit captureless 1000-node call");
    kiln::bench::absolute("re-trace + lookup, 1000-node stateful function", s.min_seconds - c.min_seconds,
                          s.median_seconds - c.median_seconds, 0.2e-3, "call");
  }
}
