// Where an elementwise reference kernel writes its result: over a donated
// input when its caller allows it, as compiled kernels do (fresh memory is
// slow to write the first time: a page fault per 4 KiB, 10 us each in some
// virtual machines).
#pragma once

#include <span>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::ops {

/// While alive on this thread, the reference kernel run on `inputs` (the
/// same span) may write its result over input k where `donated[k]`: no one
/// reads that input afterwards. Only the elementwise kernels take it, which
/// write element i after reading every input's element i.
class DonatedInputs {
 public:
  DonatedInputs(std::span<const Array> inputs, std::span<const char> donated);
  ~DonatedInputs();
  DonatedInputs(const DonatedInputs&) = delete;
  DonatedInputs& operator=(const DonatedInputs&) = delete;
};

/// `input`'s memory as an array of `type`, where the caller may write a
/// result of that type over it: its dtype and shape, no other array sharing
/// the memory (a view would), and more than a few bytes. Else an empty Array.
Array writable_over(const Array& input, const detail::AbstractValue& type);

/// The result of `node` for an elementwise reference kernel: a donated input
/// of the result's type whose memory no other array shares, else a fresh array.
Array elementwise_result(const ir::Node& node, std::span<const Array> inputs);

}  // namespace kiln::ops
