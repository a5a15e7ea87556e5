// Golden texts that name source lines: "@N" stands for the line `base + N`,
// so expected IR survives edits above the test.
#pragma once

#include <cctype>
#include <string>

namespace kiln::testing {

inline std::string at_lines(std::string text, int base) {
  for (size_t pos; (pos = text.find('@')) != std::string::npos;) {
    size_t end = pos + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    int offset = std::stoi(text.substr(pos + 1, end - pos - 1));
    text.replace(pos, end - pos, std::to_string(base + offset));
  }
  return text;
}

}  // namespace kiln::testing
