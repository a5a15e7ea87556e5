// The structured trace (KILN_TRACE, telemetry::start_trace): every kind of
// record a run can write is written, reads back as JSON with its fields, and
// `kiln report` turns it into a page naming each function, explanation and
// source line.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "persistent_fixture.h"

namespace kiln::testing {
namespace {

using Json = nlohmann::json;

std::vector<Json> read_records(const std::string& path) {
  std::vector<Json> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    Json record = Json::parse(line, nullptr, false);
    EXPECT_FALSE(record.is_discarded()) << "not JSON: " << line;
    if (!record.is_discarded()) records.push_back(std::move(record));
  }
  return records;
}

class CompileTrace : public PersistentCacheTest {
 protected:
  void SetUp() override {
    PersistentCacheTest::SetUp();
    trace_directory_ = directory_ + "/trace";
  }
  void TearDown() override {
    telemetry::stop_trace();
    set_cache_limits(CacheLimits{});
    PersistentCacheTest::TearDown();
  }

  // A run that makes every kind of record: compiles (sync and background),
  // hits, a persistent hit, a dynamic dimension, a storm, an eviction and a
  // graph shared by two functions.
  std::string traced_run() {
    telemetry::start_trace(trace_directory_);
    std::string file = telemetry::trace_file();
    call();  // compiles and saves "persisted"
    call();  // a fresh function: loaded from the persistent cache
    auto rows =
        jit([](const Array& x) { return sum(exp(x), {1}); }, {.name = "rows", .compile_mode = CompileMode::Sync});
    for (int64_t n : {8, 8, 8, 16}) rows(full({n, 32}, 0.5f));  // two hits, then a dynamic dimension
    auto churn = jit([](const Array& x) { return x + 1; },
                     {.name = "churn", .recompile_limit = 2, .compile_mode = CompileMode::Sync});
    for (DType dtype : {f32, f64, i32, i64}) churn(astype(full({4}, 1.0f), dtype));  // a storm of dtype changes
    set_cache_limits(CacheLimits{.per_function = 1});
    auto small = jit([](const Array& x) { return x * 2; }, {.name = "small", .compile_mode = CompileMode::Sync});
    small(full({4}, 1.0f));
    small(astype(full({4}, 1.0f), f64));  // pushes the f32 entry out
    auto twin = jit([](const Array& x) { return x * 2; }, {.name = "twin", .compile_mode = CompileMode::Sync});
    twin(full({4}, 1.0f));  // the graph "small" compiled: a miss that shares it
    wait_for_background_compiles();
    telemetry::stop_trace();
    EXPECT_TRUE(telemetry::trace_file().empty());
    return file;
  }

  std::string trace_directory_;
};

TEST_F(CompileTrace, EveryKindOfRecordIsWrittenAndReadsBack) {
  std::string file = traced_run();
  ASSERT_TRUE(fs::exists(file)) << file;
  EXPECT_NE(fs::path(file).filename().string().find("kiln-trace-" + std::to_string(::getpid())), std::string::npos);
  std::vector<Json> records = read_records(file);
  std::map<std::string, std::vector<Json>> by_kind;
  for (const Json& record : records) {
    ASSERT_TRUE(record.contains("t") && record["t"].is_number()) << record.dump();
    by_kind[record["kind"]].push_back(record);
  }
  for (const char* kind : {"process", "graph", "compile", "compile_ready", "persistent_hit", "calls", "dynamic",
                           "storm", "evict", "shared_graph"})
    EXPECT_FALSE(by_kind[kind].empty()) << "no '" << kind << "' record";

  EXPECT_EQ(by_kind["process"].front()["pid"], ::getpid());
  std::set<std::string> compiled;
  for (const Json& compile : by_kind["compile"]) {
    compiled.insert(compile["function"]);
    EXPECT_FALSE(compile["reason"].get<std::string>().empty());
    // "persisted" is the fixture's function.
    const char* file = compile["function"] == "persisted" ? "persistent_fixture.h:" : "test_compile_trace.cpp:";
    EXPECT_NE(compile["where"].get<std::string>().find(file), std::string::npos) << compile.dump();
    EXPECT_EQ(compile["key"].get<std::string>().size(), 16u);
  }
  EXPECT_EQ(compiled, (std::set<std::string>{"persisted", "rows", "churn", "small"}));
  for (const Json& ready : by_kind["compile_ready"]) {
    EXPECT_GT(ready["seconds"].get<double>(), 0);
    EXPECT_GT(ready["phases"]["codegen"].get<double>() + ready["phases"]["link"].get<double>(), 0);
  }
  // Each graph once, with its IR (source lines included) and a picture with its fused kernels.
  std::set<std::string> graph_keys;
  for (const Json& graph : by_kind["graph"]) {
    EXPECT_TRUE(graph_keys.insert(graph["key"]).second) << "graph written twice: " << graph["key"];
    const char* file = graph["function"] == "persisted" ? "persistent_fixture.h:" : "test_compile_trace.cpp:";
    EXPECT_NE(graph["ir"].get<std::string>().find(file), std::string::npos) << graph["ir"];
    EXPECT_NE(graph["dot"].get<std::string>().find("digraph"), std::string::npos);
  }
  for (const Json& compile : by_kind["compile"]) EXPECT_TRUE(graph_keys.count(compile["key"])) << compile.dump();
  int64_t rows_hits = -1;
  for (const Json& calls : by_kind["calls"])
    if (calls["function"] == "rows") rows_hits = calls["hits"];
  EXPECT_EQ(rows_hits, 2);
  EXPECT_EQ(by_kind["persistent_hit"].front()["function"], "persisted");
  EXPECT_NE(by_kind["dynamic"].front()["decision"].get<std::string>().find("becomes dynamic"), std::string::npos);
  EXPECT_EQ(by_kind["storm"].front()["function"], "churn");
  EXPECT_EQ(by_kind["evict"].front()["function"], "small");
  EXPECT_EQ(by_kind["shared_graph"].front()["function"], "twin");
  EXPECT_NE(by_kind["evict"].front()["arguments"].get<std::string>().find("f32[4]"), std::string::npos);
}

TEST_F(CompileTrace, TheReportNamesEachFunctionExplanationAndLine) {
  traced_run();
  std::string page = directory_ + "/report.html";
  auto [status, output] = run(std::string(KILN_TOOL) + " report '" + trace_directory_ + "' -o '" + page + "' 2>&1");
  ASSERT_EQ(status, 0) << output;
  EXPECT_NE(output.find("5 functions"), std::string::npos) << output;
  std::string html = read_file(page);
  for (const char* function : {"persisted", "rows", "churn", "small"})
    EXPECT_NE(html.find("<code>" + std::string(function) + "</code>"), std::string::npos) << function;
  EXPECT_NE(html.find("becomes dynamic"), std::string::npos);
  EXPECT_NE(html.find("dtype changed"), std::string::npos);
  EXPECT_NE(html.find("test_compile_trace.cpp:"), std::string::npos);
  EXPECT_NE(html.find("class=\"compile-row storm\""), std::string::npos) << "the storm's compile is not highlighted";
  EXPECT_NE(html.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("class=\"picture\"><svg"), std::string::npos) << "no graph picture: is Graphviz installed?";
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/"));  // nothing fetched at view time

  auto [graph_status, dot] = run(std::string(KILN_TOOL) + " graph '" + trace_directory_ + "' --function rows");
  EXPECT_EQ(graph_status, 0);
  EXPECT_EQ(dot.rfind("digraph \"rows\"", 0), 0u) << dot;
  EXPECT_NE(dot.find("subgraph cluster_"), std::string::npos) << "exp and sum fuse into one kernel: " << dot;
}

TEST(CompileTraceStart, AnUnwritableDirectoryIsAClearError) {
  try {
    telemetry::start_trace("/proc/kiln-cannot-write-here");
    FAIL() << "no error";
  } catch (const Error& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("start_trace"), std::string::npos) << text;
    EXPECT_NE(text.find("KILN_TRACE"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace kiln::testing
