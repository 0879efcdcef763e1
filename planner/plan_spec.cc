// Plan spec parsing (see plan_spec.h).
#include "planner/plan_spec.h"

#include <set>
#include <utility>

namespace clairfs {
namespace {

struct KeyValue {
  std::string key;
  std::string value;
};

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

Status SpecError(std::string_view spec, const std::string& problem) {
  return Status::Invalid("plan spec '" + std::string(spec) + "': " + problem);
}

// Splits "k=v,k=v" and rejects empty items, missing '=', unknown and duplicate keys.
Result<std::vector<KeyValue>> ParseKeyValues(std::string_view spec, std::string_view kind,
                                             std::string_view body,
                                             const std::vector<std::string>& known) {
  std::vector<KeyValue> items;
  std::set<std::string> seen;
  for (std::string_view item : Split(body, ',')) {
    size_t eq = item.find('=');
    if (item.empty()) return SpecError(spec, "empty item (stray ',')");
    if (eq == std::string_view::npos) {
      return SpecError(spec, "'" + std::string(item) + "' is not key=value");
    }
    std::string key(item.substr(0, eq));
    bool is_known = false;
    for (const auto& k : known) is_known = is_known || k == key;
    if (!is_known) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return SpecError(
          spec, "unknown key '" + key + "' for " + std::string(kind) + " (known: " + list + ")");
    }
    if (!seen.insert(key).second) return SpecError(spec, "duplicate key '" + key + "'");
    items.push_back({key, std::string(item.substr(eq + 1))});
  }
  return items;
}

Result<bool> ParseFlag(std::string_view spec, const KeyValue& kv) {
  if (kv.value == "0") return false;
  if (kv.value == "1") return true;
  return SpecError(spec, kv.key + "='" + kv.value + "' must be 0 or 1");
}

// Checks that `seed` is what the library for `kind` accepts, with the library's reason.
Status CheckSeedRange(std::string_view spec, SamplerKind kind, const SeedInteger& seed) {
  std::optional<__int128> value = seed.ToInt128();
  switch (kind) {
    case SamplerKind::kTorchDistributed:
    case SamplerKind::kTorchRandom: {
      const __int128 min = -(static_cast<__int128>(1) << 63);
      const __int128 max = (static_cast<__int128>(1) << 64) - 1;
      if (!value || *value < min || *value > max) {
        return SpecError(spec, "seed " + seed.text +
                                   " is out of range: torch's manual_seed accepts -2^63 .. "
                                   "2^64-1 ('Overflow when unpacking long')");
      }
      return Status::Ok();
    }
    case SamplerKind::kNumpy:
      if (!value || *value < 0 || *value > 0xffffffffll) {
        return SpecError(spec, "seed " + seed.text +
                                   " is out of range: numpy RandomState accepts 0 .. 2^32-1 "
                                   "('Seed must be between 0 and 2**32 - 1')");
      }
      return Status::Ok();
    case SamplerKind::kNumpyRng:
      if (seed.negative) {
        return SpecError(spec, "seed " + seed.text +
                                   " is negative: numpy default_rng accepts non-negative integers "
                                   "('expected non-negative integer')");
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

Status ParseRanks(std::string_view spec, const std::string& value, PlanSpec* out) {
  size_t dash = value.find('-');
  if (dash == std::string::npos) {
    return SpecError(spec, "ranks='" + value + "' must be A-B (e.g. ranks=0-7, or 3-3 for one)");
  }
  auto first = ParseDecimalU64(std::string_view(value).substr(0, dash), UINT32_MAX, "ranks");
  if (!first.ok()) return SpecError(spec, first.status().message());
  auto last = ParseDecimalU64(std::string_view(value).substr(dash + 1), UINT32_MAX, "ranks");
  if (!last.ok()) return SpecError(spec, last.status().message());
  if (*first > *last) return SpecError(spec, "ranks='" + value + "' is empty (A > B)");
  out->first_rank = static_cast<uint32_t>(*first);
  out->last_rank = static_cast<uint32_t>(*last);
  return Status::Ok();
}

Result<PlanSpec> ParseKeyedSpec(std::string_view spec, PlanSpec out, std::string_view body) {
  const char* kind_name = SamplerKindName(out.kind);
  std::vector<std::string> known;
  switch (out.kind) {
    case SamplerKind::kTorchDistributed:
      known = {"seed",    "world",  "ranks",       "drop_last",
               "shuffle", "epochs", "start_epoch", "set_epoch"};
      break;
    case SamplerKind::kTorchRandom:
      known = {"seed", "epochs", "persistent_workers"};
      break;
    case SamplerKind::kNumpy:
      known = {"seed", "epochs", "reseed"};
      break;
    case SamplerKind::kNumpyRng:
      known = {"seed", "epochs"};
      break;
    default:
      known = {"epochs"};
      break;
  }
  auto items = ParseKeyValues(spec, kind_name, body, known);
  if (!items.ok()) return items.status();
  bool has_seed = false, has_world = false, has_ranks = false;
  for (const KeyValue& kv : *items) {
    if (kv.key == "seed") {
      auto seed = ParseSeedInteger(kv.value, "seed");
      if (!seed.ok()) return SpecError(spec, seed.status().message());
      CLAIRFS_RETURN_IF_ERROR(CheckSeedRange(spec, out.kind, *seed));
      out.seed = std::move(*seed);
      has_seed = true;
    } else if (kv.key == "world") {
      auto world = ParseDecimalU64(kv.value, UINT32_MAX, "world");
      if (!world.ok()) return SpecError(spec, world.status().message());
      if (*world == 0) return SpecError(spec, "world=0: the world needs at least one rank");
      out.world = static_cast<uint32_t>(*world);
      has_world = true;
    } else if (kv.key == "ranks") {
      CLAIRFS_RETURN_IF_ERROR(ParseRanks(spec, kv.value, &out));
      has_ranks = true;
    } else if (kv.key == "drop_last") {
      auto flag = ParseFlag(spec, kv);
      if (!flag.ok()) return flag.status();
      out.drop_last = *flag;
    } else if (kv.key == "shuffle") {
      auto flag = ParseFlag(spec, kv);
      if (!flag.ok()) return flag.status();
      out.shuffle = *flag;
    } else if (kv.key == "set_epoch") {
      auto flag = ParseFlag(spec, kv);
      if (!flag.ok()) return flag.status();
      out.set_epoch = *flag;
    } else if (kv.key == "persistent_workers") {
      auto flag = ParseFlag(spec, kv);
      if (!flag.ok()) return flag.status();
      out.persistent_workers = *flag;
    } else if (kv.key == "epochs") {
      auto epochs = ParseDecimalU64(kv.value, UINT64_MAX, "epochs");
      if (!epochs.ok()) return SpecError(spec, epochs.status().message());
      if (*epochs == 0) return SpecError(spec, "epochs=0: a plan needs at least one epoch");
      out.end_epoch = *epochs;
    } else if (kv.key == "start_epoch") {
      auto start = ParseDecimalU64(kv.value, UINT64_MAX, "start_epoch");
      if (!start.ok()) return SpecError(spec, start.status().message());
      out.start_epoch = *start;
    } else if (kv.key == "reseed") {
      if (kv.value == "none") {
        out.reseed = NumpyReseed::kNone;
      } else if (kv.value == "epoch") {
        out.reseed = NumpyReseed::kEpoch;
      } else {
        return SpecError(spec, "reseed='" + kv.value + "' must be none or epoch");
      }
    }
  }
  bool needs_seed = out.kind != SamplerKind::kSequential;
  if (needs_seed && !has_seed) return SpecError(spec, std::string(kind_name) + " needs seed=S");
  if (out.kind == SamplerKind::kTorchDistributed) {
    if (!has_world) return SpecError(spec, "torch-distributed needs world=R");
    if (!has_ranks) {
      out.first_rank = 0;
      out.last_rank = out.world - 1;
    } else if (out.last_rank >= out.world) {
      return SpecError(spec, "ranks=" + std::to_string(out.first_rank) + "-" +
                                 std::to_string(out.last_rank) + " outside the world (ranks 0-" +
                                 std::to_string(out.world - 1) + ")");
    }
  }
  if (out.end_epoch && out.start_epoch >= *out.end_epoch) {
    return SpecError(spec, "start_epoch=" + std::to_string(out.start_epoch) +
                               " is not before epochs=" + std::to_string(*out.end_epoch) +
                               " (the plan covers epochs start_epoch .. epochs-1)");
  }
  return out;
}

}  // namespace

const char* SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kTorchDistributed:
      return "torch-distributed";
    case SamplerKind::kTorchRandom:
      return "torch-random";
    case SamplerKind::kNumpy:
      return "numpy";
    case SamplerKind::kNumpyRng:
      return "numpy-rng";
    case SamplerKind::kSequential:
      return "sequential";
    case SamplerKind::kList:
      return "list";
  }
  return "?";
}

std::optional<__int128> SeedInteger::ToInt128() const {
  // Magnitudes up to 2^127 - 1 fit; larger ones do not (bigger than any seed we range-check).
  if (magnitude.size() > 4) return std::nullopt;
  unsigned __int128 m = 0;
  for (size_t i = magnitude.size(); i-- > 0;) m = (m << 32) | magnitude[i];
  if (m >> 127) return std::nullopt;
  __int128 v = static_cast<__int128>(m);
  return negative ? -v : v;
}

Result<SeedInteger> ParseSeedInteger(std::string_view text, std::string_view what) {
  SeedInteger out;
  out.text = std::string(text);
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '-') {
    out.negative = true;
    digits.remove_prefix(1);
  }
  if (digits.empty()) {
    return Status::Invalid(std::string(what) + "='" + std::string(text) +
                           "' is not a decimal integer");
  }
  if (digits.size() > kMaxSeedDigits) {
    // numpy accepts any size; parsing is quadratic in the length, so we stop somewhere sane.
    return Status::Invalid(std::string(what) + " has " + std::to_string(digits.size()) +
                           " digits; clairfs accepts at most " + std::to_string(kMaxSeedDigits));
  }
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return Status::Invalid(std::string(what) + "='" + std::string(text) +
                             "' is not a decimal integer");
    }
    // magnitude = magnitude * 10 + digit, on 32-bit words.
    uint64_t carry = static_cast<uint64_t>(c - '0');
    for (uint32_t& word : out.magnitude) {
      uint64_t product = static_cast<uint64_t>(word) * 10 + carry;
      word = static_cast<uint32_t>(product);
      carry = product >> 32;
    }
    if (carry != 0) out.magnitude.push_back(static_cast<uint32_t>(carry));
  }
  if (out.magnitude.empty()) out.negative = false;  // "-0" is 0
  return out;
}

Result<uint64_t> ParseDecimalU64(std::string_view text, uint64_t max, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid(std::string(what) + "='" + std::string(text) + "' " + why);
  };
  if (text.empty()) return bad("is empty");
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("is not a non-negative decimal integer");
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return bad("is too large (max " + std::to_string(max) + ")");
    value = value * 10 + digit;
  }
  return value;
}

std::string FormatSeedInteger(const SeedInteger& seed) {
  // Repeated division of the magnitude by 10^9 gives nine decimal digits at a time.
  std::vector<uint32_t> words = seed.magnitude;
  std::vector<uint32_t> groups;  // base 10^9, least significant first
  while (!words.empty()) {
    uint64_t remainder = 0;
    for (size_t i = words.size(); i-- > 0;) {
      const uint64_t value = (remainder << 32) | words[i];
      words[i] = static_cast<uint32_t>(value / 1000000000u);
      remainder = value % 1000000000u;
    }
    groups.push_back(static_cast<uint32_t>(remainder));
    while (!words.empty() && words.back() == 0) words.pop_back();
  }
  if (groups.empty()) return "0";
  std::string out = seed.negative ? "-" : "";
  out += std::to_string(groups.back());
  for (size_t i = groups.size() - 1; i-- > 0;) {
    const std::string digits = std::to_string(groups[i]);
    out += std::string(9 - digits.size(), '0') + digits;
  }
  return out;
}

std::string FormatPlanSpec(const PlanSpec& spec) {
  const std::string kind = SamplerKindName(spec.kind);
  if (spec.kind == SamplerKind::kList) return kind + ":" + spec.list_file;
  std::vector<std::string> items;
  if (spec.kind != SamplerKind::kSequential)
    items.push_back("seed=" + FormatSeedInteger(spec.seed));
  if (spec.kind == SamplerKind::kTorchDistributed) {
    items.push_back("world=" + std::to_string(spec.world));
    if (spec.first_rank != 0 || spec.last_rank != spec.world - 1) {
      items.push_back("ranks=" + std::to_string(spec.first_rank) + "-" +
                      std::to_string(spec.last_rank));
    }
    if (spec.drop_last) items.push_back("drop_last=1");
    if (!spec.shuffle) items.push_back("shuffle=0");
  }
  if (spec.end_epoch) items.push_back("epochs=" + std::to_string(*spec.end_epoch));
  if (spec.kind == SamplerKind::kTorchDistributed && spec.start_epoch != 0) {
    items.push_back("start_epoch=" + std::to_string(spec.start_epoch));
  }
  if (spec.kind == SamplerKind::kTorchDistributed && !spec.set_epoch) {
    items.push_back("set_epoch=0");
  }
  if (spec.kind == SamplerKind::kTorchRandom && spec.persistent_workers) {
    items.push_back("persistent_workers=1");
  }
  if (spec.kind == SamplerKind::kNumpy && spec.reseed == NumpyReseed::kEpoch) {
    items.push_back("reseed=epoch");
  }
  std::string out = kind;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? ":" : ",") + items[i];
  return out;
}

Result<PlanSpec> ParsePlanSpec(std::string_view text) {
  PlanSpec out;
  out.text = std::string(text);
  size_t colon = text.find(':');
  std::string_view kind = text.substr(0, colon);
  std::string_view body = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (kind == "list") {
    out.kind = SamplerKind::kList;
    if (body.empty()) return SpecError(text, "list needs a file: list:FILE");
    out.list_file = std::string(body);
    return out;
  }
  if (kind == "sequential") {
    out.kind = SamplerKind::kSequential;
    if (colon == std::string_view::npos) return out;
    if (body.empty()) return SpecError(text, "nothing after 'sequential:'");
    return ParseKeyedSpec(text, out, body);
  }
  if (kind == "torch-distributed") {
    out.kind = SamplerKind::kTorchDistributed;
  } else if (kind == "torch-random") {
    out.kind = SamplerKind::kTorchRandom;
  } else if (kind == "numpy") {
    out.kind = SamplerKind::kNumpy;
  } else if (kind == "numpy-rng") {
    out.kind = SamplerKind::kNumpyRng;
  } else {
    return SpecError(text, "unknown sampler '" + std::string(kind) +
                               "' (expected torch-distributed, torch-random, numpy, numpy-rng, "
                               "sequential or list)");
  }
  if (colon == std::string_view::npos || body.empty()) {
    return SpecError(text,
                     std::string(kind) + " needs seed=S (e.g. " + std::string(kind) + ":seed=42)");
  }
  return ParseKeyedSpec(text, out, body);
}

std::string FormatJobPlanSpec(const PlanSpec& spec) {
  PlanSpec job = spec;
  if (job.kind == SamplerKind::kTorchDistributed) {
    job.first_rank = 0;
    job.last_rank = job.world - 1;
  }
  return FormatPlanSpec(job);
}

}  // namespace clairfs
