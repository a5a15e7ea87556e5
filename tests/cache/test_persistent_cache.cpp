// The persistent compilation cache: a later process (or a fresh jit after
// the in-memory caches are emptied) loads instead of compiling; every kind
// of bad file is discarded, logged and recompiled; directories that are not
// the user's own are refused; the size bound evicts the least recently used;
// many processes share one directory; and the kiln tool lists, counts,
// verifies and clears it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cache/persistent_entry.h"
#include "persistent_fixture.h"
#include "telemetry/telemetry.h"

namespace kiln {
namespace {

using testing::child_command;
using testing::PersistentCacheTest;
using testing::read_file;
using testing::results_of;
using testing::run;
using testing::write_file;
namespace fs = std::filesystem;

TEST_F(PersistentCacheTest, AFreshStartLoadsWhatAnEarlierCompileSaved) {
  Run cold = call();
  EXPECT_EQ(cold.stats.compiles, 1);
  EXPECT_EQ(cold.stats.persistent_hits, 0);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].function, "persisted");
  EXPECT_EQ(entries()[0].problem, "");
  Run warm = call();
  EXPECT_EQ(warm.stats.compiles, 0);
  EXPECT_EQ(warm.stats.persistent_hits, 1);
  EXPECT_GT(warm.stats.saved_compile_seconds, 0.0);
  EXPECT_EQ(warm.result, cold.result);
  EXPECT_EQ(entries()[0].hits, 1);
  // Another literal is another graph: compiled and saved beside the first.
  Run other = call(2.0f);
  EXPECT_EQ(other.stats.compiles, 1);
  EXPECT_NE(other.result, cold.result);
  EXPECT_EQ(entries().size(), 2u);
}

TEST_F(PersistentCacheTest, EveryKindOfBadFileIsDiscardedLoggedAndRecompiled) {
  Run reference = call();
  std::string path = only_entry();
  std::string good = read_file(path);
  cache::DecodedEntry decoded = cache::decode_entry(good);
  auto rewritten = [&](auto change) {
    cache::DecodedEntry copy = decoded;
    change(copy.header);
    return cache::encode_entry(copy.header, copy.executable, nullptr);
  };
  std::string outside = directory_ + "-outside.kiln";
  write_file(outside, good);
  const std::string original = good;
  struct Case {
    std::string name;
    std::function<void()> spoil;
    std::string reason;
  };
  std::vector<Case> cases = {
      {"truncated", [&] { write_file(path, good.substr(0, good.size() / 2)); }, "cut short"},
      {"bit flipped",
       [&] {
         write_file(path,
                    good.substr(0, good.size() - 7) + char(good[good.size() - 7] ^ 4) + good.substr(good.size() - 6));
       },
       "checksum does not match"},
      {"zero length", [&] { write_file(path, ""); }, "the file is empty"},
      {"another build",
       [&] { write_file(path, rewritten([](cache::EntryHeader& h) { h.build = "0.0.1+0123456789abcdef"; })); },
       "written by kiln build 0.0.1+0123456789abcdef"},
      {"another CPU",
       [&] { write_file(path, rewritten([](cache::EntryHeader& h) { h.target += ",+imaginary-feature"; })); },
       "compiled for"},
      {"another key", [&] { write_file(path, rewritten([](cache::EntryHeader& h) { h.key = std::string(32, 'a'); })); },
       "it holds key"},
      {"garbage", [&] { write_file(path, std::string(4000, '\x5a')); }, "not a kiln cache entry"},
      {"symlink",
       [&] {
         fs::remove(path);
         fs::create_symlink(outside, path);
       },
       "symbolic link"},
  };
  telemetry::set_log_mask(telemetry::log_cache);
  for (const Case& test : cases) {
    test.spoil();
    ::testing::internal::CaptureStderr();
    Run again = call();
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(again.stats.compiles, 1) << test.name;
    EXPECT_EQ(again.stats.persistent_hits, 0) << test.name;
    EXPECT_EQ(again.result, reference.result) << test.name;
    EXPECT_NE(log.find("discarded " + fs::path(path).filename().string() + ": "), std::string::npos)
        << test.name << "\n"
        << log;
    EXPECT_NE(log.find(test.reason), std::string::npos) << test.name << "\n" << log;
    // The recompiled executable was saved again, whole and sound.
    EXPECT_FALSE(fs::is_symlink(path)) << test.name;
    EXPECT_EQ(only_entry(), path) << test.name;
    EXPECT_EQ(entries()[0].problem, "") << test.name;
    EXPECT_EQ(call().stats.persistent_hits, 1) << test.name;
    good = read_file(path);
  }
  // The symlink's target outside the directory was neither read nor removed.
  EXPECT_TRUE(read_file(outside) == original);
  fs::remove(outside);
}

TEST_F(PersistentCacheTest, DirectoriesThatAreNotTheUsersOwnAreRefusedWithOneWarning) {
  auto expect_refused = [&](const std::string& directory, const std::string& reason) {
    use(directory);
    ::testing::internal::CaptureStderr();
    Run first = call();
    Run second = call();
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(first.stats.compiles + second.stats.compiles, 2) << directory;
    EXPECT_EQ(second.result, first.result);
    EXPECT_NE(log.find("kiln: warning: the persistent compilation cache '" + directory + "' is not used: " + reason),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("warning", log.find("warning") + 1), std::string::npos) << "warned twice:\n" << log;
  };
  std::string shared = directory_ + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0770), 0);
  expect_refused(shared, "it is writable by its group (mode 0770)");
  EXPECT_TRUE(fs::is_empty(shared));
  ASSERT_EQ(::chmod(shared.c_str(), 0707), 0);
  expect_refused(shared, "it is writable by others (mode 0707)");
  std::string link = directory_ + "/link";
  std::string own = directory_ + "/own";
  ASSERT_EQ(::mkdir(own.c_str(), 0700), 0);
  fs::create_directory_symlink(own, link);
  expect_refused(link, "it is a symbolic link");
  if (::geteuid() == 0) {
    std::string foreign = directory_ + "/foreign";
    ASSERT_EQ(::mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
    expect_refused(foreign, "it belongs to user id 65534, not to this user (0)");
  } else {
    expect_refused("/usr/share", "it belongs to user id 0");
  }
  // A missing directory is created private.
  std::string fresh = directory_ + "/a/b/kiln";
  use(fresh);
  EXPECT_EQ(call().stats.compiles, 1);
  struct stat status {};
  ASSERT_EQ(::stat(fresh.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0700u);
}

TEST_F(PersistentCacheTest, TheSizeBoundEvictsTheLeastRecentlyUsed) {
  // File times advance with the kernel's clock tick (a few milliseconds):
  // uses a tick apart are ordered.
  auto tick = [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); };
  call(1.0f);
  uint64_t one = entries()[0].bytes;
  use(directory_, 2 * one + one / 2);  // room for two entries
  tick();
  call(2.0f);
  tick();
  EXPECT_EQ(call(1.0f).stats.persistent_hits, 1);  // 1.0 is now more recent than 2.0
  tick();
  telemetry::set_log_mask(telemetry::log_cache);
  ::testing::internal::CaptureStderr();
  call(3.0f);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("evicted"), std::string::npos) << log;
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_EQ(call(1.0f).stats.persistent_hits, 1);
  EXPECT_EQ(call(3.0f).stats.persistent_hits, 1);
  EXPECT_EQ(call(2.0f).stats.compiles, 1);  // the least recently used went
}

TEST_F(PersistentCacheTest, ASecondProcessCompilesNothingAndComputesTheSame) {
  auto [first_status, first] = run(child_command(directory_));
  ASSERT_EQ(first_status, 0) << first;
  // Three jitted functions, the eager random numbers and arithmetic around them.
  EXPECT_NE(first.find("jitted compiles=3 persistent_hits=0"), std::string::npos) << first;
  auto [second_status, second] = run(child_command(directory_));
  ASSERT_EQ(second_status, 0) << second;
  EXPECT_NE(second.find("jitted compiles=0 persistent_hits=3"), std::string::npos) << second;
  EXPECT_NE(second.find("process compiles=0 "), std::string::npos) << second;
  EXPECT_EQ(results_of(second), results_of(first));
}

TEST_F(PersistentCacheTest, CodeFromProcessesThatNamedItAlikeStaysApart) {
  // Each child's first compile names its kernels alike; a third process
  // loading both must not take one's code for the other's.
  auto [first_status, first] = run(child_command(directory_) + " first");
  auto [second_status, second] = run(child_command(directory_) + " second");
  ASSERT_EQ(first_status + second_status, 0) << first << second;
  auto [both_status, both] = run(child_command(directory_) + " both");
  ASSERT_EQ(both_status, 0) << both;
  EXPECT_NE(both.find("process compiles=0 persistent_hits=2"), std::string::npos) << both;
  EXPECT_NE(both.find(results_of(first)), std::string::npos) << both;
  EXPECT_NE(both.find(results_of(second)), std::string::npos) << both;
}

TEST_F(PersistentCacheTest, ASymbolicEntrySavedAtOneLengthServesAnotherInTheNextProcess) {
  auto [first_status, first] = run(child_command(directory_) + " dynamic 5");
  ASSERT_EQ(first_status, 0) << first;
  EXPECT_NE(first.find("process compiles=1 persistent_hits=0"), std::string::npos) << first;
  auto [second_status, second] = run(child_command(directory_) + " dynamic 12");
  ASSERT_EQ(second_status, 0) << second;
  EXPECT_NE(second.find("process compiles=0 persistent_hits=1"), std::string::npos) << second;
  // The loaded executable computes what one compiled at length 12 computes.
  std::string fresh_directory = directory_ + "/fresh";
  ASSERT_EQ(::mkdir(fresh_directory.c_str(), 0700), 0);
  auto [fresh_status, fresh] = run(child_command(fresh_directory) + " dynamic 12");
  ASSERT_EQ(fresh_status, 0) << fresh;
  EXPECT_EQ(results_of(second), results_of(fresh));
}

TEST_F(PersistentCacheTest, FourProcessesStartingTogetherOnAColdCacheAgree) {
  std::string reference_directory = directory_ + "/reference";
  ASSERT_EQ(::mkdir(reference_directory.c_str(), 0700), 0);
  std::string shared = directory_ + "/shared";
  auto [status, reference] = run(child_command(reference_directory));
  ASSERT_EQ(status, 0) << reference;
  std::vector<FILE*> children;
  for (int k = 0; k < 4; ++k) children.push_back(::popen(child_command(shared).c_str(), "r"));
  for (FILE* child : children) {
    ASSERT_NE(child, nullptr);
    std::string output;
    std::array<char, 4096> chunk;
    while (size_t got = std::fread(chunk.data(), 1, chunk.size(), child)) output.append(chunk.data(), got);
    EXPECT_EQ(::pclose(child), 0) << output;
    EXPECT_EQ(results_of(output), results_of(reference));
  }
  use(shared);
  for (const cache::EntryInfo& entry : entries()) EXPECT_EQ(entry.problem, "") << entry.path;
  auto [verify_status, verified] = run(std::string(KILN_TOOL) + " cache verify --dir '" + shared + "'");
  EXPECT_EQ(verify_status, 0) << verified;
  EXPECT_NE(verified.find(" 0 bad"), std::string::npos) << verified;
  auto [again_status, again] = run(child_command(shared));
  EXPECT_NE(again.find("jitted compiles=0 persistent_hits=3"), std::string::npos) << again;
  // Nothing half-written is left behind.
  for (const auto& item : fs::directory_iterator(shared))
    EXPECT_FALSE(item.path().filename().string().starts_with(".tmp-")) << item.path();
}

TEST_F(PersistentCacheTest, TheKilnToolListsCountsVerifiesAndClears) {
  call(1.0f);
  call(2.0f);
  call(1.0f);
  std::string dir = " --dir '" + directory_ + "'";
  auto [ls_status, listed] = run(std::string(KILN_TOOL) + " cache ls --json" + dir);
  ASSERT_EQ(ls_status, 0) << listed;
  nlohmann::json list = nlohmann::json::parse(listed);
  ASSERT_EQ(list.size(), 2u);
  int64_t hits = 0;
  for (const auto& entry : list) {
    EXPECT_EQ(entry["function"], "persisted");
    EXPECT_GT(entry["bytes"].get<int64_t>(), 0);
    hits += entry["hits"].get<int64_t>();
  }
  EXPECT_EQ(hits, 1);
  auto [stats_status, stats_text] = run(std::string(KILN_TOOL) + " cache stats --json" + dir);
  nlohmann::json stats = nlohmann::json::parse(stats_text);
  EXPECT_EQ(stats["entries"], 2);
  EXPECT_EQ(stats["directory"], directory_);
  auto [plain_status, plain] = run(std::string(KILN_TOOL) + " cache ls" + dir);
  EXPECT_NE(plain.find("persisted"), std::string::npos) << plain;

  std::string spoiled = list[0]["path"];
  write_file(spoiled, "not an entry");
  auto [bad_status, bad] = run(std::string(KILN_TOOL) + " cache verify" + dir);
  EXPECT_EQ(bad_status, 1) << bad;
  EXPECT_NE(bad.find(spoiled + ": the file is not a kiln cache entry"), std::string::npos) << bad;
  auto [removed_status, removed] = run(std::string(KILN_TOOL) + " cache verify --remove" + dir);
  EXPECT_EQ(removed_status, 0) << removed;
  EXPECT_FALSE(fs::exists(spoiled));
  EXPECT_EQ(run(std::string(KILN_TOOL) + " cache verify" + dir).first, 0);

  auto [clear_status, cleared] = run(std::string(KILN_TOOL) + " cache clear" + dir);
  EXPECT_EQ(clear_status, 0);
  EXPECT_NE(cleared.find("removed 1 entries"), std::string::npos) << cleared;
  EXPECT_TRUE(entries().empty());
  auto [help_status, help] = run(std::string(KILN_TOOL) + " --help");
  EXPECT_EQ(help_status, 0);
  EXPECT_NE(help.find("kiln cache <command>"), std::string::npos) << help;
  EXPECT_EQ(run(std::string(KILN_TOOL) + " cache frobnicate 2>/dev/null").first, 2);
}

}  // namespace
}  // namespace kiln
