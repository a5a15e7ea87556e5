// pad_to_bucket: a composite of pad that keeps the set of shapes a jitted
// function sees small when one dimension varies from call to call.
#include <algorithm>

#include "core/error_format.h"
#include "ops/common/axes.h"
#include "ops/common/promotion.h"

namespace kiln {

Array pad_to_bucket(const Array& x, int64_t axis, std::vector<int64_t> buckets, Scalar value, Location where) {
  const auto& type = detail::impl_of(x, "pad_to_bucket", where).type;
  int64_t dimension = ops::normalize_axis(axis, type.ndim(), "pad_to_bucket", type.shape, where);
  int64_t length = type.shape[static_cast<size_t>(dimension)];
  int64_t target = 1;
  if (buckets.empty()) {
    while (target < length) target *= 2;
  } else {
    std::sort(buckets.begin(), buckets.end());
    auto fits = std::lower_bound(buckets.begin(), buckets.end(), length);
    if (fits == buckets.end())
      detail::raise("pad_to_bucket",
                    "length " + std::to_string(length) + " of axis " + std::to_string(axis) + " in " +
                        type.to_string() + " is beyond the largest bucket " + std::to_string(buckets.back()),
                    where, "add a larger bucket");
    target = *fits;
  }
  std::vector<int64_t> lo(type.shape.size(), 0), hi(type.shape.size(), 0);
  hi[static_cast<size_t>(dimension)] = target - length;
  return pad(x, lo, hi, value, where);
}

}  // namespace kiln
