// The persistent cache across edits, machines and teams: keys that ignore
// source lines and names, bundles that carry a warm cache to a fresh
// directory, and signed entries that keep a shared directory from being a
// way to run code in other people's processes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cache/cache_bundle.h"
#include "cache/entry_signing.h"
#include "cache/persistent_entry.h"
#include "persistent_fixture.h"
#include "support/errors.h"

namespace kiln {
namespace {

using testing::child_command;
using testing::PersistentCacheTest;
using testing::read_file;
using testing::results_of;
using testing::run;
using testing::write_file;
namespace fs = std::filesystem;

std::string moved_child_command(const std::string& directory) {
  return "KILN_CACHE=on KILN_CACHE_DIR='" + directory + "' " KILN_PERSISTENT_CHILD_MOVED;
}

class PersistentSharing : public PersistentCacheTest {
 protected:
  // A private key file of `bytes` random bytes.
  std::string key_file(const std::string& name, size_t bytes = 32, mode_t mode = 0600) {
    std::string path = directory_ + "-" + name + ".key";
    std::string secret;
    for (size_t k = 0; k < bytes; ++k) secret.push_back(static_cast<char>((k * 131 + name.size() * 17 + 7) & 0xff));
    write_file(path, secret);
    ::chmod(path.c_str(), mode);
    keys_.push_back(path);
    return path;
  }
  void use_signed(const std::string& key) {
    cache::reset_persistent_cache(cache::PersistentOptions{.enabled = true, .directory = directory_, .key_file = key});
    forget_in_memory();
  }
  void TearDown() override {
    for (const std::string& key : keys_) fs::remove(key);
    PersistentCacheTest::TearDown();
  }
  std::vector<std::string> keys_;
};

// ---- keys that survive an edit ----------------------------------------------------

TEST_F(PersistentSharing, AProgramWithItsLinesMovedAndItsFunctionsRenamedSharesItsEntries) {
  auto [first_status, first] = run(child_command(directory_));
  ASSERT_EQ(first_status, 0) << first;
  EXPECT_NE(first.find("jitted compiles=3 persistent_hits=0"), std::string::npos) << first;
  auto [moved_status, moved] = run(moved_child_command(directory_) + " lines");
  ASSERT_EQ(moved_status, 0) << moved;
  EXPECT_NE(moved.find("jitted compiles=0 persistent_hits=3"), std::string::npos) << moved;
  // The loaded code computes what the first program computed...
  EXPECT_NE(moved.find(results_of(first).substr(0, results_of(first).find("rnn"))), std::string::npos) << moved;
  // ...and what the moved program says of its graph names its own lines.
  EXPECT_NE(moved.find("# moved_child.cpp:50"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("persistent_child.cpp"), std::string::npos) << moved;
}

TEST_F(PersistentSharing, FunctionsAtOtherLinesWithOtherNamesLoadEachOthersCode) {
  auto first = jit([](const Array& x) { return tanh(matmul(x, x) * 3.0f) + 0.5f; }, {.name = "here"});
  Array x = arange(16) * 0.1f;
  std::vector<float> expected = first(x).to_vector<float>();
  EXPECT_EQ(first.stats().compiles, 1);
  forget_in_memory();
  int line = __LINE__ + 1;
  auto second = jit([](const Array& x) { return tanh(matmul(x, x) * 3.0f) + 0.5f; });  // default name: this line
  EXPECT_EQ(second(x).to_vector<float>(), expected);
  EXPECT_EQ(second.stats().compiles, 0);
  EXPECT_EQ(second.stats().persistent_hits, 1);
  // What the second function reports names its own line, not the first's.
  std::string text = second.lower(x).to_string();
  EXPECT_NE(text.find("test_persistent_sharing.cpp:" + std::to_string(line)), std::string::npos) << text;
  testing::expect_error(line, [&] { second(zeros({2, 3})); }, {"[matmul]"});
}

// ---- bundles ---------------------------------------------------------------------

TEST_F(PersistentSharing, ABundleCarriesAWarmCacheToAFreshDirectory) {
  auto [status, cold] = run(child_command(directory_));
  ASSERT_EQ(status, 0) << cold;
  // The jitted functions' entries and those of the eager operations compiled around them.
  size_t count = entries().size();
  ASSERT_GE(count, 3u);
  std::string bundle = directory_ + "/../" + fs::path(directory_).filename().string() + ".kilnbundle";
  auto [export_status, exported] =
      run(std::string(KILN_TOOL) + " cache export '" + bundle + "' --dir '" + directory_ + "'");
  ASSERT_EQ(export_status, 0) << exported;
  EXPECT_NE(exported.find("exported " + std::to_string(count) + " entries"), std::string::npos) << exported;

  std::string fresh = directory_ + "/fresh";
  ASSERT_EQ(::mkdir(fresh.c_str(), 0700), 0);
  auto [import_status, imported] =
      run(std::string(KILN_TOOL) + " cache import '" + bundle + "' --json --dir '" + fresh + "'");
  ASSERT_EQ(import_status, 0) << imported;
  nlohmann::json report = nlohmann::json::parse(imported);
  EXPECT_EQ(report["imported"], count);
  EXPECT_EQ(report["refused"], 0);
  auto [warm_status, warm] = run(child_command(fresh));
  ASSERT_EQ(warm_status, 0) << warm;
  EXPECT_NE(warm.find("jitted compiles=0 persistent_hits=3"), std::string::npos) << warm;
  EXPECT_NE(warm.find("process compiles=0 "), std::string::npos) << warm;
  EXPECT_EQ(results_of(warm), results_of(cold));
  // Importing again keeps the sound entries as they are.
  auto [again_status, again] = run(std::string(KILN_TOOL) + " cache import '" + bundle + "' --dir '" + fresh + "'");
  EXPECT_EQ(again_status, 0) << again;
  EXPECT_NE(again.find("0 imported, " + std::to_string(count) + " already here, 0 refused"), std::string::npos)
      << again;
  // One function's entries alone.
  auto [one_status, one] =
      run(std::string(KILN_TOOL) + " cache export '" + bundle + "' --function rnn --dir '" + directory_ + "'");
  EXPECT_NE(one.find("exported 1 entries"), std::string::npos) << one;
  fs::remove(bundle);
}

TEST_F(PersistentSharing, ImportsValidateEveryEntryAndNeverReplaceASoundOne) {
  call(1.0f);
  call(2.0f);
  std::string bundle = directory_ + "-bundle";
  cache::BundleReport exported = cache::export_entries(bundle);
  EXPECT_EQ(exported.entries, 2u);
  std::string bytes = read_file(bundle);

  // A corrupt bundle is refused whole, naming the caller's line.
  std::string corrupt = bytes;
  corrupt[corrupt.size() / 2] ^= 1;
  write_file(bundle + "-corrupt", corrupt);
  int line = __LINE__ + 1;
  testing::expect_error(line, [&] { cache::import_entries(bundle + "-corrupt"); }, {"[cache import]", "checksum"});
  write_file(bundle + "-short", bytes.substr(0, 40));
  EXPECT_THROW(cache::import_entries(bundle + "-short"), Error);

  // An entry of another build inside an intact bundle is refused alone.
  std::vector<cache::EntryInfo> listed = entries();
  ASSERT_EQ(listed.size(), 2u);
  std::string foreign_path = listed[0].path;
  cache::DecodedEntry decoded = cache::decode_entry(read_file(foreign_path));
  decoded.header.build = "0.0.1+0123456789abcdef";
  write_file(foreign_path, cache::encode_entry(decoded.header, decoded.executable, nullptr));
  cache::BundleReport mixed = cache::export_entries(bundle + "-mixed");
  EXPECT_EQ(mixed.entries, 1u);
  EXPECT_EQ(mixed.refused, 1u);

  // Into a directory with a sound entry and a spoiled one: the sound one is
  // kept, the spoiled one replaced, and nothing unsound is written.
  cache::persistent_cache()->clear();
  ASSERT_EQ(cache::import_entries(bundle).imported, 2u);
  std::string kept_path = entries()[0].path, spoiled_path = entries()[1].path;
  std::string kept_before = read_file(kept_path);
  write_file(spoiled_path, "spoiled");
  cache::BundleReport report = cache::import_entries(bundle);
  EXPECT_EQ(report.entries, 2u);
  EXPECT_EQ(report.kept, 1u);
  EXPECT_EQ(report.imported, 1u);
  EXPECT_EQ(read_file(kept_path), kept_before);
  for (const cache::EntryInfo& info : entries()) EXPECT_EQ(info.problem, "") << info.path;
  for (const char* suffix : {"", "-corrupt", "-short", "-mixed"}) fs::remove(bundle + suffix);
}

// ---- signed entries --------------------------------------------------------------

TEST_F(PersistentSharing, KeysThatAreTooShortOrNotPrivateAreRefused) {
  for (auto [key, reason] : {std::pair{key_file("short", 16), "it holds 16 bytes; a key needs at least 32"},
                             std::pair{key_file("readable", 32, 0644), "others can read or write it (mode 0644)"}}) {
    use_signed(key);
    ::testing::internal::CaptureStderr();
    Run first = call();
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(first.stats.compiles, 1);
    EXPECT_NE(log.find("is refused: " + std::string(reason)), std::string::npos) << log;
    EXPECT_TRUE(fs::is_empty(directory_)) << "a refused key writes nothing";
  }
}

TEST_F(PersistentSharing, OnlyEntriesSignedWithTheKeyLoad) {
  std::string ours = key_file("ours"), theirs = key_file("theirs");
  use_signed(ours);
  Run reference = call();
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].signature, "signed");
  EXPECT_EQ(call().stats.persistent_hits, 1);
  std::string path = entries()[0].path;

  // Entries perfect in every other way (format, checksum, build, target,
  // key), signed with another key or with none, are discarded before their
  // code is linked: the log gives the signature as the reason.
  telemetry::set_log_mask(telemetry::log_cache);
  cache::DecodedEntry decoded = cache::decode_entry(read_file(path));
  std::string their_key_secret = read_file(theirs);
  cache::SigningKey their_key{their_key_secret, theirs};
  std::string forged = cache::encode_entry(decoded.header, decoded.executable, &their_key);
  std::string unsigned_entry = cache::encode_entry(decoded.header, decoded.executable, nullptr);
  for (auto [name, bytes, reason] :
       {std::tuple{"signed with another key", forged, "its signature does not verify"},
        std::tuple{"unsigned", unsigned_entry,
                   "it is unsigned, and this cache loads only entries signed with its key"}}) {
    ASSERT_NO_THROW(cache::decode_entry(bytes)) << name;
    write_file(path, bytes);
    ::testing::internal::CaptureStderr();
    Run again = call();
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(again.stats.persistent_hits, 0) << name;
    EXPECT_EQ(again.stats.compiles, 1) << name;
    EXPECT_EQ(again.result, reference.result) << name;
    EXPECT_NE(log.find(reason), std::string::npos) << name << "\n" << log;
    EXPECT_EQ(log.find("does not fit the graph"), std::string::npos) << "linked before the signature was checked";
    EXPECT_EQ(entries()[0].signature, "signed") << "recompiled and signed again";
  }
  // Without a key the unsigned entry loads, as before signing existed: the
  // key is what keeps it out.
  write_file(path, unsigned_entry);
  use(directory_);
  EXPECT_EQ(call().stats.persistent_hits, 1);

  // `kiln cache verify` with the key reports unsigned and forged entries.
  write_file(path, forged);
  call(2.0f);  // a sound unsigned entry beside it
  std::string tool = "KILN_CACHE_KEY_FILE='" + ours + "' " + KILN_TOOL + " cache verify --dir '" + directory_ + "'";
  auto [status, verified] = run(tool);
  EXPECT_EQ(status, 1) << verified;
  EXPECT_NE(verified.find("its signature does not verify"), std::string::npos) << verified;
  EXPECT_NE(verified.find("it is unsigned"), std::string::npos) << verified;
  EXPECT_NE(verified.find("2 entries, 2 bad"), std::string::npos) << verified;
}

TEST_F(PersistentSharing, ASignedCacheMayLiveInADirectoryOthersCanWrite) {
  ASSERT_EQ(::chmod(directory_.c_str(), 0770), 0);
  use(directory_);
  ::testing::internal::CaptureStderr();
  call();
  std::string refused = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(refused.find("writable by its group"), std::string::npos) << refused;
  use_signed(key_file("team"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(call().stats.compiles, 1);
  EXPECT_EQ(call().stats.persistent_hits, 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace kiln
