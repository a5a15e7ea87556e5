// The entries of one jitted function (see the header).
#include "cache/function_entries.h"

#include <algorithm>

namespace kiln::cache {

namespace {
// How many evicted signatures and keys explanations remember.
constexpr size_t evicted_memory = 4096;

}  // namespace

std::shared_ptr<Entry> FunctionEntries::by_signature(const std::string& signature) const {
  auto found = by_signature_.find(signature);
  return found == by_signature_.end() ? nullptr : found->second;
}

std::shared_ptr<Entry> FunctionEntries::by_symbolic_signature(const std::string& signature,
                                                              const std::vector<int64_t>& values) const {
  auto [begin, end] = by_symbolic_.equal_range(signature);
  for (auto it = begin; it != end; ++it) {
    const std::vector<SizeRange>& ranges = it->second->ranges;
    bool holds = true;
    for (size_t i = 0; i < ranges.size() && i < values.size(); ++i) holds = holds && ranges[i].contains(values[i]);
    if (holds) return it->second;
  }
  return nullptr;
}

bool FunctionEntries::has_symbolic_signature(const std::string& signature) const {
  return by_symbolic_.count(signature) > 0;
}

std::shared_ptr<Entry> FunctionEntries::by_graph(uint64_t key, const ir::Graph& graph) const {
  auto [begin, end] = by_graph_.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    const ir::Graph& compiled = *it->second->lifted.graph;
    if (compiled.structurally_equal(graph) && compiled.same_literals(graph)) return it->second;
  }
  return nullptr;
}

std::vector<std::shared_ptr<Entry>> FunctionEntries::insert(const std::shared_ptr<Entry>& entry, bool by_signature) {
  entries_.push_front(entry);
  // A pending symbolic entry has no graph yet: it is found by its signature alone.
  if (entry->lifted.graph) by_graph_.emplace(entry->executable_key, entry);
  if (entry->symbolic) by_symbolic_.emplace(entry->signature, entry);
  else if (by_signature) by_signature_[entry->signature] = entry;
  size_t limit = std::max<size_t>(1, cache_limits().per_function);
  std::vector<std::shared_ptr<Entry>> evicted;
  while (entries_.size() > limit) {
    std::shared_ptr<Entry> oldest = entries_.back();
    remove(oldest);
    remember_evicted(oldest->signature);
    remember_evicted(std::to_string(oldest->executable_key));
    evicted.push_back(std::move(oldest));
  }
  return evicted;
}

void FunctionEntries::settle(const std::shared_ptr<Entry>& pending) {
  remove(pending);
  pending->settled = true;
}

void FunctionEntries::alias(const std::string& signature, const std::shared_ptr<Entry>& entry, bool symbolic) {
  if (symbolic) by_symbolic_.emplace(signature, entry);
  else by_signature_[signature] = entry;
}

void FunctionEntries::forget_signature(const std::string& signature) { by_signature_.erase(signature); }

void FunctionEntries::touch(const std::shared_ptr<Entry>& entry) {
  if (!entries_.empty() && entries_.front() == entry) return;  // the steady state of a hot loop
  auto position = std::find(entries_.begin(), entries_.end(), entry);
  if (position != entries_.end()) entries_.splice(entries_.begin(), entries_, position);
}

bool FunctionEntries::was_evicted(const std::string& signature, uint64_t key) const {
  return evicted_.count(signature) || evicted_.count(std::to_string(key));
}

void FunctionEntries::remove(const std::shared_ptr<Entry>& entry) {
  entries_.remove(entry);
  std::erase_if(by_signature_, [&](const auto& item) { return item.second == entry; });
  std::erase_if(by_symbolic_, [&](const auto& item) { return item.second == entry; });
  std::erase_if(by_graph_, [&](const auto& item) { return item.second == entry; });
}

void FunctionEntries::remember_evicted(const std::string& id) {
  if (evicted_.insert(id).second) evicted_order_.push_back(id);
  while (evicted_order_.size() > evicted_memory) {
    evicted_.erase(evicted_order_.front());
    evicted_order_.pop_front();
  }
}

}  // namespace kiln::cache
