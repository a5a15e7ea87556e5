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

Array writable_over(const Array& input, const detail::AbstractValue& type) {
  const detail::ArrayImpl& impl = *detail::impl(input);
  // A view shares the memory; small arrays are not worth it.
  if (!impl.buffer || impl.buffer.use_count() != 1 || impl.buffer->lent() ||
      impl.buffer->bytes() <= detail::Buffer::inline_bytes || impl.type.dtype != type.dtype ||
      impl.type.shape != type.shape)
    return Array();
  auto written = std::make_shared<detail::ArrayImpl>();
  written->type = type;
  written->buffer = impl.buffer;
  return detail::wrap(std::move(written));
}

Array elementwise_result(const ir::Node& node, std::span<const Array> inputs) {
  Donation donation = current;
  current = {};
  if (donation.inputs == inputs.data())
    for (size_t k = 0; k < inputs.size() && k < donation.donated.size(); ++k)
      if (donation.donated[k])
        if (Array written = writable_over(inputs[k], node.type); written.defined()) return written;
  return detail::allocate(node.type);
}

}  // namespace kiln::ops
