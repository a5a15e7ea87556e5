// Cache tests start from empty caches at the default limits, with the log
// quiet, and leave the default log (storms) behind.
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "telemetry/telemetry.h"

namespace kiln::testing {

class FreshCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_graph_cache();
    set_cache_limits(CacheLimits{});
    telemetry::set_log_mask(0);
  }
  void TearDown() override { telemetry::set_log_mask(telemetry::log_storms); }
};

}  // namespace kiln::testing
