// Values as bytes and back: hashing graphs, and the files the persistent
// cache writes. Values are stored in this machine's representation; files
// say which machine wrote them, and a reader checks every length against
// what is left, so a short or garbled file fails to read instead of
// reading past its end.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kiln::detail {

class ByteWriter {
 public:
  /// Writes into `bytes`, emptied first.
  explicit ByteWriter(std::string& bytes) : bytes_(bytes) { bytes_.clear(); }
  template <class T>
  void add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <class T>
  void add_vector(const std::vector<T>& values) {
    add(static_cast<uint32_t>(values.size()));
    if (!values.empty()) bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  void add_string(std::string_view text) {
    add(static_cast<uint64_t>(text.size()));
    bytes_.append(text);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string& bytes_;
};

/// Thrown when bytes end before what they announce.
class TruncatedBytes : public std::runtime_error {
 public:
  TruncatedBytes() : std::runtime_error("the bytes end early") {}
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  template <class T>
  T read() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::string_view read_string() { return take(read<uint64_t>()); }
  size_t left() const { return bytes_.size() - position_; }

 private:
  std::string_view take(uint64_t count) {
    if (count > left()) throw TruncatedBytes();
    std::string_view part = bytes_.substr(position_, count);
    position_ += count;
    return part;
  }
  std::string_view bytes_;
  size_t position_ = 0;
};

}  // namespace kiln::detail
