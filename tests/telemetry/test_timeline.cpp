// The execution timeline (telemetry::start_profile, KILN_PROFILE=FILE): a
// Chrome trace-event file whose spans nest on every thread, showing kernels
// by their fused primitives, the thread pool's parts, BLAS calls with their
// sizes, compile phases on the thread that compiles and collectives.
#include <gtest/gtest.h>
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/llvm/kernel_cache.h"
#include "runtime/thread_pool.h"
#include "telemetry/timeline.h"

namespace kiln {
namespace {

using nlohmann::json;
namespace timeline = telemetry::timeline;

// Each test writes a file of its own, removed afterwards.
class Timeline : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = (std::filesystem::temp_directory_path() /
             ("kiln-timeline-" + std::to_string(::getpid()) + "-" + test + ".json"))
                .string();
  }
  void TearDown() override {
    telemetry::stop_profile();
    std::filesystem::remove(path_);
  }

  json read() const {
    std::ifstream in(path_);
    return json::parse(in);  // throws on anything but one valid JSON document
  }
  json record(const std::function<void()>& work) {
    telemetry::start_profile(path_);
    work();
    telemetry::stop_profile();
    return read();
  }

  std::string path_;
};

// Every thread's B and E events nest as a stack, at times that never go back.
void expect_well_formed(const json& trace) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace.contains("traceEvents") && trace["traceEvents"].is_array());
  EXPECT_FALSE(trace["traceEvents"].empty());
  EXPECT_EQ(trace.value("displayTimeUnit", ""), "ms");
  std::map<int, std::vector<std::string>> open;
  std::map<int, double> last;
  for (const json& event : trace["traceEvents"]) {
    std::string phase = event.at("ph");
    int thread = event.at("tid");
    EXPECT_TRUE(event.contains("pid")) << event;
    if (phase == "M") continue;
    ASSERT_TRUE(phase == "B" || phase == "E") << event;
    double time = event.at("ts");
    if (last.count(thread)) EXPECT_GE(time, last[thread]) << event;
    last[thread] = time;
    if (phase == "B") {
      open[thread].push_back(event.at("name"));
      continue;
    }
    ASSERT_FALSE(open[thread].empty()) << "an end without its beginning: " << event;
    open[thread].pop_back();
  }
  for (const auto& [thread, names] : open)
    EXPECT_TRUE(names.empty()) << "thread " << thread << " left '" << names.back() << "' open";
}

// The spans of one category.
std::vector<json> spans(const json& trace, const std::string& category) {
  std::vector<json> found;
  for (const json& event : trace["traceEvents"])
    if (event.at("ph") == "B" && event.value("cat", "") == category) found.push_back(event);
  return found;
}

std::map<int, std::string> thread_names(const json& trace) {
  std::map<int, std::string> names;
  for (const json& event : trace["traceEvents"])
    if (event.at("ph") == "M" && event.value("name", "") == "thread_name")
      names[event.at("tid")] = event["args"]["name"];
  return names;
}

std::string listing(const std::vector<json>& events) {
  std::string text;
  for (const json& event : events) text += event.dump() + "\n";
  return text;
}

TEST_F(Timeline, AJittedFunctionShowsItsKernelsPartsBlasCallsAndCompilePhases) {
  // A compile of its own (no graph or kernel compiled earlier in this process is reused).
  clear_graph_cache();
  llvm_backend::clear_kernel_cache();
  auto layer = jit([](const Array& x, const Array& w) { return sum(exp(x) * 0.5f + x, {1}) + sum(matmul(x, w), {1}); },
                   {.name = "timeline_layer"});
  Array x = full({1024, 1024}, 0.25f), w = full({1024, 64}, 0.01f);
  // Made before the recording, and run before it too.
  synchronize();
  json trace = record([&] {
    for (int call = 0; call < 3; ++call) layer(x, w);
  });
  expect_well_formed(trace);

  // The fused chain is a kernel of its own, or one of a row group's kernels
  // (its rows then pass to the next kernel through the cache).
  std::vector<json> kernels = spans(trace, "kernel"), groups = spans(trace, "row group"), steps = spans(trace, "step");
  bool fused_chain = false;
  for (const json& kernel : kernels) {
    EXPECT_EQ(kernel["args"]["graph"], "timeline_layer") << kernel;
    if (kernel["name"] != "exp·mul·add·reduce_sum") continue;
    fused_chain = true;
    EXPECT_EQ(kernel["args"]["elements"], 1 << 20) << kernel;
  }
  for (const json& group : groups) {
    EXPECT_EQ(group["args"]["graph"], "timeline_layer") << group;
    if (group["name"].get<std::string>().find("| exp·mul·add·reduce_sum |") == std::string::npos) continue;
    fused_chain = true;
    EXPECT_EQ(group["args"]["rows"], 1024) << group;
  }
  EXPECT_TRUE(fused_chain) << "no kernel named by the fused exp, mul, add and sum:\n"
                           << listing(kernels) << listing(groups);
  EXPECT_EQ(spans(trace, "executable").size(), 3u);

  std::vector<json> blas = spans(trace, "blas");
  int64_t rows = 0;
  for (const json& call : blas) {
    EXPECT_EQ(call["name"], "sgemm") << call;
    EXPECT_EQ(call["args"]["k"], 1024) << call;
    EXPECT_EQ(call["args"]["n"], 64) << call;
    rows += call["args"]["m"].get<int64_t>();
  }
  EXPECT_EQ(rows, 3 * 1024) << "each call's parts multiply all 1024 rows:\n" << listing(blas);

  std::set<std::string> phases;
  for (const json& phase : spans(trace, "compile")) phases.insert(phase["name"]);
  for (const char* phase : {"compile", "simplify", "plan", "IR", "optimize", "codegen", "link"})
    EXPECT_TRUE(phases.count(phase)) << "no '" << phase << "' compile span";

  std::map<int, std::string> threads = thread_names(trace);
  int main_thread = -1;
  for (const auto& [thread, name] : threads)
    if (name == "main") main_thread = thread;
  EXPECT_NE(main_thread, -1) << "no thread named main";

  // Parts are labeled with their kernel, on whichever thread ran them.
  if (runtime::thread_count() > 1) {
    std::vector<json> parts = spans(trace, "part");
    ASSERT_FALSE(parts.empty()) << "the pool split no loop";
    std::set<std::string> step_names;
    for (const std::vector<json>* named : {&kernels, &groups, &steps})
      for (const json& step : *named) step_names.insert(step["name"].get<std::string>());
    for (const json& part : parts) {
      EXPECT_TRUE(step_names.count(part["name"])) << part;
      EXPECT_LT(part["args"]["part"], part["args"]["parts"]) << part;
    }
  }
}

TEST_F(Timeline, APartThatThrowsEndsEverySpanItIsIn) {
  json trace = record([] {
    timeline::Span outer;
    outer.begin("test", "outer");
    try {
      runtime::parallel_for(1 << 20, 4, [](int64_t begin, int64_t) {
        timeline::Span inner;
        inner.begin("test", "inner");
        if (begin == 0) throw std::runtime_error("a failing part");
      });
      ADD_FAILURE() << "the part's exception did not reach the caller";
    } catch (const std::runtime_error&) {
    }
  });
  expect_well_formed(trace);
  std::multiset<std::string> names;
  for (const json& span : spans(trace, "test")) names.insert(span["name"]);
  EXPECT_EQ(names.count("outer"), 1u);
  EXPECT_GE(names.count("inner"), 1u);
}

TEST_F(Timeline, CollectivesShowTheirBytesInAWorldOfOne) {
  json trace = record([] { distributed::all_reduce(full({1024}, 1.0f)).to_vector<float>(); });
  expect_well_formed(trace);
  std::vector<json> collectives = spans(trace, "collective");
  ASSERT_EQ(collectives.size(), 1u) << listing(collectives);
  EXPECT_EQ(collectives[0]["name"], "all_reduce");
  EXPECT_EQ(collectives[0]["args"]["bytes"], 4096);
  EXPECT_EQ(collectives[0]["args"]["ranks"], 1);
}

TEST_F(Timeline, ASpanRunningAtTheStopEndsThereAndNeverInTheNextProfile) {
  json first, second;
  {
    timeline::Span never;
    never.begin("test", "begun while off");  // nothing records: a no-op
    telemetry::start_profile(path_);
    timeline::Span running;
    running.begin("test", "running at the stop");
    telemetry::stop_profile();
    first = read();
    telemetry::start_profile(path_);
  }
  telemetry::stop_profile();
  second = read();
  expect_well_formed(first);
  expect_well_formed(second);
  std::vector<json> begun = spans(first, "test");
  ASSERT_EQ(begun.size(), 1u) << listing(begun);
  EXPECT_EQ(begun[0]["name"], "running at the stop");
  EXPECT_EQ(first["traceEvents"].back()["args"]["unfinished"], true);
  EXPECT_TRUE(spans(second, "test").empty());
}

TEST_F(Timeline, StartingOnAPathThatCannotBeWrittenOrTwiceNamesTheFix) {
  try {
    telemetry::start_profile("/nonexistent-kiln-directory/profile.json");
    ADD_FAILURE() << "start_profile opened a file in a missing directory";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("start_profile"), std::string::npos) << message;
    EXPECT_NE(message.find("/nonexistent-kiln-directory/profile.json"), std::string::npos) << message;
    EXPECT_NE(message.find("hint:"), std::string::npos) << message;
  }
  telemetry::start_profile(path_);
  try {
    telemetry::start_profile(path_ + ".second");
    ADD_FAILURE() << "a second profile started while one records";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("stop_profile()"), std::string::npos) << error.what();
  }
  telemetry::stop_profile();
  expect_well_formed(read());
}

TEST_F(Timeline, KilnProfileWritesTheFileWhenTheProgramExits) {
  std::string command = "KILN_PROFILE='" + path_ + "' " KILN_PROFILED_RUN " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char chunk[256];
  while (size_t read = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, read);
  int status = ::pclose(pipe);
  ASSERT_EQ(status, 0) << output;
  EXPECT_NE(output.find("profiled run done"), std::string::npos) << output;
  ASSERT_TRUE(std::filesystem::exists(path_)) << output;
  json trace = read();
  expect_well_formed(trace);
  EXPECT_FALSE(spans(trace, "kernel").empty());
  EXPECT_FALSE(spans(trace, "blas").empty());
  std::map<int, std::string> threads = thread_names(trace);
  std::set<std::string> names;
  for (const auto& [thread, name] : threads) names.insert(name);
  EXPECT_TRUE(names.count("main"));
  // The layer compiled on kiln's compile thread while its first call ran op by op.
  std::set<std::string> compiling;
  for (const json& phase : spans(trace, "compile")) compiling.insert(threads[phase["tid"].get<int>()]);
  EXPECT_TRUE(compiling.count("kiln compile")) << "compiles ran on: " << ::testing::PrintToString(compiling);
}

}  // namespace
}  // namespace kiln
