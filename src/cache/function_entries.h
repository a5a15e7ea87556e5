// The entries of one jitted function: each an executable with what it was
// traced from, found by argument signature, by symbolic signature or by
// graph, and evicted least recently used beyond the per-function limit.
//
// An entry is pending while its executable compiles: lookups find it, so a
// concurrent miss that it will serve waits for it instead of compiling again
// (JitFunction waits; this class does not lock). Explanations compare against
// pending entries too: the decision a miss makes does not depend on whether
// the compile before it has finished.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/dynamic_dims.h"
#include "kiln/jit.h"
#include "runtime/executable.h"
#include "transform/literal_lifting.h"

namespace kiln::cache {

struct Entry {
  std::string signature;  // a symbolic entry's holds symbols: it serves every size of them
  detail::SignatureDescription description;
  std::shared_ptr<const ir::Graph> traced;  // as traced: literal values and source lines
  transform::LiftedGraph lifted;            // what was compiled
  std::vector<Array> lifted_inputs;         // the lifted literals' values at trace time
  uint64_t executable_key = 0;
  std::shared_ptr<const runtime::Executable> executable;  // null while pending
  std::vector<Array> captures;                            // as traced; bound on signature hits (Constant freezes them)
  std::shared_ptr<const void> skeleton;
  int64_t hits = 0;
  bool symbolic = false;
  std::vector<SizeRange> ranges;  // a symbolic entry's: per symbol, the sizes its fit holds for
  bool settled = false;           // a pending entry whose compile ended (replaced or dropped)
  // Calls go to the dispatch queue even when their arguments are computed:
  // the graph's work is worth a handoff, or it has collectives (whose order
  // must be every rank's).
  bool queued = false;

  bool pending() const { return !executable; }
};

class FunctionEntries {
 public:
  std::shared_ptr<Entry> by_signature(const std::string& signature) const;
  /// The symbolic entry with this signature whose ranges hold the symbols'
  /// `values` (a pending one holds every value until its fit is known).
  std::shared_ptr<Entry> by_symbolic_signature(const std::string& signature, const std::vector<int64_t>& values) const;
  /// Whether a symbolic entry has this signature, whatever its ranges.
  bool has_symbolic_signature(const std::string& signature) const;
  /// The entry whose compiled graph is `graph` (same structure and literals).
  std::shared_ptr<Entry> by_graph(uint64_t key, const ir::Graph& graph) const;

  /// Records `entry` as the most recently used, found by its graph and (for
  /// a symbolic entry, or with `by_signature`) by its signature; evicts the
  /// least recently used beyond the per-function limit, which it returns.
  std::vector<std::shared_ptr<Entry>> insert(const std::shared_ptr<Entry>& entry, bool by_signature);
  /// Ends a pending entry: it leaves the function and is marked settled
  /// (the entry that serves its calls instead, if any, is inserted apart).
  void settle(const std::shared_ptr<Entry>& pending);
  /// `signature` is served by `entry` from now on (an unused static value
  /// traced to a known graph, or a symbolic signature a concurrent miss
  /// compiled already).
  void alias(const std::string& signature, const std::shared_ptr<Entry>& entry, bool symbolic);
  void forget_signature(const std::string& signature);
  void touch(const std::shared_ptr<Entry>& entry);

  /// Whether a call with this signature, or a graph with this key, was evicted.
  bool was_evicted(const std::string& signature, uint64_t key) const;
  /// Most recently used first.
  const std::list<std::shared_ptr<Entry>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  void remove(const std::shared_ptr<Entry>& entry);
  void remember_evicted(const std::string& id);

  std::list<std::shared_ptr<Entry>> entries_;  // most recently used first
  std::unordered_map<std::string, std::shared_ptr<Entry>> by_signature_;
  std::unordered_multimap<std::string, std::shared_ptr<Entry>> by_symbolic_;
  std::unordered_multimap<uint64_t, std::shared_ptr<Entry>> by_graph_;
  std::unordered_set<std::string> evicted_;  // signatures and graph keys, for explanations
  std::deque<std::string> evicted_order_;
};

}  // namespace kiln::cache
