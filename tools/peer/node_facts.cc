// NodeFacts and CheckJob (see node_facts.h).
#include "tools/peer/node_facts.h"

#include <cstring>
#include <map>

#include "planner/plan_spec.h"

namespace clairfs::peer {
namespace {

template <size_t N>
void Copy(char (&out)[N], const std::string& text) {
  const size_t n = std::min(text.size(), N - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

std::string NodeName(const std::vector<NodeFacts>& facts, size_t node) {
  return "rank " + std::to_string(node) + " (" + facts[node].host + ")";
}

// The value most ranks have, and the first rank that has another, if any.
struct Odd {
  std::string majority;
  size_t rank = SIZE_MAX;
};
Odd FindOdd(const std::vector<NodeFacts>& facts, std::string (*field)(const NodeFacts&)) {
  std::map<std::string, size_t> counts;
  for (const NodeFacts& f : facts) ++counts[field(f)];
  Odd odd;
  size_t best = 0;
  for (const auto& [value, count] : counts) {
    if (count > best) {
      best = count;
      odd.majority = value;
    }
  }
  for (size_t n = 0; n < facts.size(); ++n) {
    if (field(facts[n]) != odd.majority) {
      odd.rank = n;
      break;
    }
  }
  return odd;
}

}  // namespace

NodeFacts FactsFromHello(const nlohmann::json& hello, const std::string& host) {
  NodeFacts f;
  f.ok = 1;
  Copy(f.host, host);
  Copy(f.manifest_digest, hello.value("manifest_digest", std::string()));
  Copy(f.key_id, hello.value("key_id", std::string()));
  Copy(f.global_spec, hello.value("global_spec", std::string()));
  Copy(f.layout, hello.value("layout", std::string()));
  Copy(f.layout_root, hello.value("layout_root", std::string()));
  f.world = hello.value("world", 0u);
  f.first_rank = hello.value("first_rank", 0u);
  f.last_rank = hello.value("last_rank", 0u);
  f.files = hello.value("files", uint64_t{0});
  f.capacity = hello.value("capacity", uint64_t{0});
  return f;
}

NodeFacts FactsFromError(const std::string& error, const std::string& host) {
  NodeFacts f;
  Copy(f.error, error);
  Copy(f.host, host);
  return f;
}

Result<JobShape> CheckJob(const std::vector<NodeFacts>& facts) {
  for (size_t n = 0; n < facts.size(); ++n) {
    if (!facts[n].ok) {
      return Status::Invalid(NodeName(facts, n) + " cannot take part: " + facts[n].error);
    }
  }
  struct Check {
    std::string (*field)(const NodeFacts&);
    const char* what;
  };
  const Check checks[] = {
      {[](const NodeFacts& f) { return std::string(f.key_id); },
       "another peer key (every node of a job needs the site's same key)"},
      {[](const NodeFacts& f) {
         return std::string(f.manifest_digest) + "/" + std::to_string(f.files);
       },
       "another dataset (its listing differs: every node must mount the same dataset)"},
      {[](const NodeFacts& f) { return std::string(f.global_spec); },
       "another plan (every node must be given the same plan, its own ranks aside)"},
      {[](const NodeFacts& f) { return std::string(f.layout) + ":" + f.layout_root; },
       "another layout or layout root"},
  };
  for (const Check& check : checks) {
    Odd odd = FindOdd(facts, check.field);
    if (odd.rank != SIZE_MAX) {
      return Status::Invalid(NodeName(facts, odd.rank) + " has " + check.what + ": '" +
                             check.field(facts[odd.rank]) + "', the others '" + odd.majority + "'");
    }
  }
  JobShape shape;
  auto spec = ParsePlanSpec(facts[0].global_spec);
  if (!spec.ok())
    return Status::Invalid("the plan '" + std::string(facts[0].global_spec) +
                           "' does not parse: " + spec.status().message());
  shape.distributed = spec->kind == SamplerKind::kTorchDistributed;
  const uint32_t world = facts[0].world;
  if (!shape.distributed) {
    // Every node reads the whole dataset: no ranks to share out.
    shape.node_of_rank.assign(world, 0);
    return shape;
  }
  shape.node_of_rank.assign(world, UINT32_MAX);
  for (size_t n = 0; n < facts.size(); ++n) {
    for (uint64_t r = facts[n].first_rank; r <= facts[n].last_rank && r < world; ++r) {
      if (shape.node_of_rank[r] != UINT32_MAX) {
        return Status::Invalid(NodeName(facts, n) + " serves rank " + std::to_string(r) +
                               ", which " + NodeName(facts, shape.node_of_rank[r]) +
                               " serves too (ranks= must not overlap)");
      }
      shape.node_of_rank[r] = static_cast<uint32_t>(n);
    }
  }
  for (uint32_t r = 0; r < world; ++r) {
    if (shape.node_of_rank[r] == UINT32_MAX) {
      return Status::Invalid("no node serves rank " + std::to_string(r) + " of the world of " +
                             std::to_string(world) +
                             " (each node's ranks= together must cover the world)");
    }
  }
  return shape;
}

}  // namespace clairfs::peer
