// Events and the log on their own: subscribers receive every emitted event
// until their subscription ends, `wanted` says whether anyone would, and the
// log prints the enabled categories only (jit's own events are in
// tests/cache/test_jit.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "telemetry/telemetry.h"

namespace kiln {
namespace {

using telemetry::Event;
using telemetry::EventKind;

// Restores the log mask a test changes.
class Telemetry : public ::testing::Test {
 protected:
  void SetUp() override { saved_mask_ = telemetry::log_mask(); }
  void TearDown() override { telemetry::set_log_mask(saved_mask_); }

 private:
  unsigned saved_mask_ = 0;
};

TEST_F(Telemetry, SubscribersReceiveEveryEventUntilTheirSubscriptionEnds) {
  telemetry::set_log_mask(0);
  EXPECT_FALSE(telemetry::wanted(EventKind::execute));
  std::vector<std::string> first, second;
  auto one = telemetry::subscribe([&](const Event& event) { first.push_back(event.function); });
  auto two = telemetry::subscribe([&](const Event& event) { second.push_back(event.function); });
  EXPECT_TRUE(telemetry::wanted(EventKind::execute));
  telemetry::emit({EventKind::trace, "a", "", 0, ""});
  telemetry::emit({EventKind::compile, "b", "", 0, "first call"});
  one.reset();
  telemetry::emit({EventKind::execute, "c", "", 0, ""});
  EXPECT_EQ(first, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(second, (std::vector<std::string>{"a", "b", "c"}));
  two.reset();
  EXPECT_FALSE(telemetry::wanted(EventKind::execute));
  telemetry::emit({EventKind::execute, "d", "", 0, ""});
  EXPECT_EQ(second.size(), 3u);
}

TEST_F(Telemetry, TheLogPrintsOnlyEnabledCategories) {
  telemetry::set_log_mask(telemetry::log_cache);
  EXPECT_TRUE(telemetry::wanted(EventKind::cache_hit));
  EXPECT_FALSE(telemetry::wanted(EventKind::compile));
  ::testing::internal::CaptureStderr();
  telemetry::emit({EventKind::cache_hit, "f", telemetry::digest(0xabc), 0.0015, ""});
  // Compile events carry their line where their explanation is made, never here.
  telemetry::emit({EventKind::compile, "f", telemetry::digest(0xabc), 0.5, "first call"});
  telemetry::log(telemetry::log_compiles, "not printed");
  telemetry::log(telemetry::log_compiles | telemetry::log_cache, "printed");
  telemetry::warn("always printed");
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed,
            "kiln: cache_hit 'f' key 0000000000000abc 1.500 ms\n"
            "kiln: printed\n"
            "kiln: warning: always printed\n");
}

}  // namespace
}  // namespace kiln
