// SimulatedNodeCache: the copies on one simulated node: held copies (the placement's choice for
// the job, never evicted) and transient ones, evicted by the mount's plan policy (the copy whose
// next use is farthest; copies no rank of the node reads again in the loaded epochs first, least
// recently used first), as planner/cache_simulator.h's plan policy does. (Not `NodeCache`: that
// is cache/'s manifest node cache, and the `clairfs` binary links both; two classes of one name
// in one namespace break the one-definition rule, which an -O0 build of the tests showed as one
// class's destructor run on the other's objects.)
//
// Keys are (next use, tiebreak) in node time (epoch_reads.h): a copy with a next use has
// (use, file); one without has (kNeverRead, ~last use), so the largest key is the victim.
// Invariant: used() <= capacity() at every moment (Insert refuses what does not fit).
// Memory: about 100 bytes per copy (a hash slot, and an ordered-set entry for transient ones),
// plus 4 bytes per file the node holds for the job. Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "planner/cluster/file_table.h"

namespace clairfs {

class SimulatedNodeCache {
 public:
  using Key = std::pair<uint64_t, uint64_t>;

  // `holds`: the files this node keeps for the job (any order).
  SimulatedNodeCache(uint64_t capacity, std::vector<uint32_t> holds);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  // The most bytes of copies the node had at any moment.
  uint64_t peak() const { return peak_; }
  size_t holds() const { return holds_.size(); }
  // Held files whose copy is here.
  size_t HeldCopies() const;
  bool Has(uint32_t file) const { return copies_.Contains(file); }
  // True if the node keeps `file` for the job (whether or not its copy is here yet).
  bool Holds(uint32_t file) const;

  static Key KeyFor(uint32_t file, uint64_t next_use, uint64_t now);

  // Evicts transient copies, largest key first, while `bytes` do not fit and the victim's next
  // use is after `protect_until` (a copy needed at or before it stays; nullopt protects none).
  // True if `bytes` fit now.
  bool MakeRoom(uint64_t bytes, std::optional<uint64_t> protect_until,
                const std::vector<uint64_t>& sizes);
  // Adds a copy (held if Holds(file), else transient with `key`); it must fit.
  void Insert(uint32_t file, Key key, const std::vector<uint64_t>& sizes);
  // Removes a transient copy (a want that will never be staged); held or absent: no-op.
  void Drop(uint32_t file, const std::vector<uint64_t>& sizes);
  // A transient copy's key changes (after a read, or when an epoch is loaded); held: no-op.
  void Rekey(uint32_t file, Key key);
  // Transient copies with no next use in the loaded epochs (key kNeverRead), for re-keying when
  // another epoch is loaded.
  std::vector<uint32_t> NeverUsedAgain() const;

 private:
  struct Copy {
    Key key;
    bool held;
  };
  uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t peak_ = 0;
  std::vector<uint32_t> holds_;  // sorted
  FileTable<Copy> copies_;
  std::set<std::pair<Key, uint32_t>> evictable_;  // transient copies by key
};

}  // namespace clairfs
