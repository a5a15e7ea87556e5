// The object files an executable's code lives in, written beside its
// description (backend.cpp) when it is saved and linked again when it is
// loaded: each object once, however many kernels and loops share it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/llvm/engine.h"
#include "core/byte_stream.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

/// Thrown when saved bytes do not describe the executable being loaded
/// (another plan, a missing symbol): the caller compiles instead.
class SavedCodeMismatch : public runtime::SavedExecutableMismatch {
 public:
  using runtime::SavedExecutableMismatch::SavedExecutableMismatch;
};

/// Numbers the objects an executable uses, in the order first met.
class ObjectTable {
 public:
  uint32_t index(const std::shared_ptr<const ObjectCode>& object);
  void write(detail::ByteWriter& out) const;

 private:
  std::vector<std::shared_ptr<const ObjectCode>> objects_;
  std::map<const ObjectCode*, uint32_t> numbers_;
};

/// The objects of a saved executable, each linked on first use.
class LinkedObjects {
 public:
  explicit LinkedObjects(detail::ByteReader& in);
  const std::shared_ptr<const ObjectCode>& object(uint32_t index) const;
  /// The object's code linked, and the address of its symbol `symbol`.
  std::pair<void*, std::shared_ptr<const void>> address(uint32_t index, uint32_t symbol);

 private:
  std::vector<std::shared_ptr<const ObjectCode>> objects_;
  std::vector<Engine::Linked> linked_;  // empty (no code) until first used
};

}  // namespace kiln::llvm_backend
