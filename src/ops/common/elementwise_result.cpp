// Donated inputs for elementwise reference kernels (see the header).
#include "ops/common/elementwise_result.h"

#include <memory>

#include "core/array_impl.h"

namespace kiln::ops {

namespace {
// Set by DonatedInputs, taken by the first elementwise_result on the same
// inputs: a kernel another kernel calls on other arrays never sees it.
struct Donation {
  const Array* inputs = nullptr;
  std::span<const char> donated;
};
thread_local Donation current;
}  // namespace

DonatedInputs::DonatedInputs(std::span<const Array> inputs, std::span<const char> donated) {
  current = {inputs.data(), donated};
}

DonatedInputs::~DonatedInputs() { current = {}; }

Array elementwise_result(const ir::Node& node, std::span<const Array> inputs) {
  Donation donation = current;
  current = {};
  if (donation.inputs == inputs.data()) {
    for (size_t k = 0; k < inputs.size() && k < donation.donated.size(); ++k) {
      if (!donation.donated[k]) continue;
      const detail::ArrayImpl& input = *detail::impl(inputs[k]);
      // A view shares the memory; small arrays are not worth it.
      if (!input.buffer || input.buffer.use_count() != 1 || input.buffer->lent() ||
          input.buffer->bytes() <= detail::Buffer::inline_bytes)
        continue;
      if (input.type.dtype != node.type.dtype || input.type.shape != node.type.shape) continue;
      auto written = std::make_shared<detail::ArrayImpl>();
      written->type = node.type;
      written->buffer = input.buffer;
      return detail::wrap(std::move(written));
    }
  }
  return detail::allocate(node.type);
}

}  // namespace kiln::ops
