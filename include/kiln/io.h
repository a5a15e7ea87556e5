// Reading and writing arrays in formats NumPy and PyTorch read: safetensors
// for named collections, .npy for single arrays.
#pragma once

#include <map>
#include <string>

#include "kiln/array.h"

namespace kiln {

void save(const std::string& path, const std::map<std::string, Array>& arrays, Location where = Location::current());
std::map<std::string, Array> load(const std::string& path, Location where = Location::current());

void save_npy(const std::string& path, const Array& array, Location where = Location::current());
Array load_npy(const std::string& path, Location where = Location::current());

}  // namespace kiln
