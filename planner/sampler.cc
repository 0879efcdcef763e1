// The sampler reproductions (see sampler.h).
#include "planner/sampler.h"

#include <optional>
#include <utility>

#include "planner/numpy_random.h"
#include "planner/pcg64.h"
#include "planner/torch_randperm.h"

namespace clairfs {
namespace {

// The uint64 torch's manual_seed receives for a Python int in [-2^63, 2^64 - 1].
uint64_t TwosComplement(__int128 value) { return static_cast<uint64_t>(value); }

std::string Int128ToString(__int128 value) {
  bool negative = value < 0;
  unsigned __int128 magnitude =
      negative ? -static_cast<unsigned __int128>(value) : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  return negative ? "-" + digits : digits;
}

std::shared_ptr<const EpochOrder> SingleRank(uint64_t epoch, IndexVector order, bool identity,
                                             uint64_t num_samples) {
  return EpochOrder::Strided(epoch, std::move(order), identity, num_samples, 1, num_samples);
}

class TorchDistributedSampler : public Sampler {
 public:
  TorchDistributedSampler(const PlanSpec& spec, uint64_t num_samples)
      : seed_(*spec.seed.ToInt128()),
        world_(spec.world),
        shuffle_(spec.shuffle),
        seed_epoch_(spec.set_epoch ? std::nullopt : std::optional<uint64_t>(spec.start_epoch)),
        num_samples_(num_samples),
        per_rank_(DistributedSamplesPerRank(num_samples, spec.world, spec.drop_last)) {}

  Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) override {
    if (!shuffle_) {
      return EpochOrder::Strided(epoch, IndexVector(), true, num_samples_, world_, per_rank_);
    }
    // DistributedSampler calls g.manual_seed(self.seed + self.epoch) with Python ints; without
    // set_epoch calls its epoch attribute never moves.
    __int128 seed = seed_ + static_cast<__int128>(seed_epoch_.value_or(epoch));
    const __int128 max = (static_cast<__int128>(1) << 64) - 1;
    if (seed > max) {
      return Status::Invalid("epoch " + std::to_string(epoch) +
                             ": seed + epoch = " + Int128ToString(seed) +
                             " is beyond torch's manual_seed range (max 2^64-1)");
    }
    TorchGenerator generator(TwosComplement(seed));
    IndexVector order = Randperm(num_samples_, generator);
    return EpochOrder::Strided(epoch, std::move(order), false, num_samples_, world_, per_rank_);
  }

 private:
  __int128 seed_;
  uint32_t world_;
  bool shuffle_;
  std::optional<uint64_t> seed_epoch_;  // set_epoch=0: the epoch every order is seeded with
  uint64_t num_samples_;
  uint64_t per_rank_;
};

class TorchRandomSampler : public Sampler {
 public:
  TorchRandomSampler(const PlanSpec& spec, uint64_t num_samples)
      : seed_(TwosComplement(*spec.seed.ToInt128())),
        persistent_workers_(spec.persistent_workers),
        num_samples_(num_samples),
        generator_(seed_) {}

  Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) override {
    if (epoch < next_epoch_) {
      generator_.ManualSeed(seed_);
      next_epoch_ = 0;
    }
    for (; next_epoch_ < epoch; ++next_epoch_) {
      DrawBaseSeed(next_epoch_);
      SkipRandperm(num_samples_, generator_);
      SkipRandperm(num_samples_, generator_);
    }
    DrawBaseSeed(epoch);
    IndexVector order = Randperm(num_samples_, generator_);
    // RandomSampler computes one more randperm(N) when the epoch's iterator is exhausted and
    // throws it away; it still advances the generator.
    SkipRandperm(num_samples_, generator_);
    next_epoch_ = epoch + 1;
    return SingleRank(epoch, std::move(order), false, num_samples_);
  }

 private:
  // The DataLoader iterator's _base_seed = random64() % 2^63, drawn when the iterator is
  // created: every epoch, or only the first with persistent workers (the iterator is reused).
  void DrawBaseSeed(uint64_t epoch) {
    if (epoch == 0 || !persistent_workers_) generator_.RandomInt64();
  }

  uint64_t seed_;
  bool persistent_workers_;
  uint64_t num_samples_;
  TorchGenerator generator_;
  uint64_t next_epoch_ = 0;  // the epoch whose draws the generator yields next
};

class NumpyLegacySampler : public Sampler {
 public:
  NumpyLegacySampler(const PlanSpec& spec, uint64_t num_samples)
      : seed_(static_cast<uint32_t>(*spec.seed.ToInt128())),
        reseed_(spec.reseed),
        num_samples_(num_samples),
        state_(seed_) {}

  Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) override {
    if (reseed_ == NumpyReseed::kEpoch) {
      uint64_t seed = uint64_t{seed_} + epoch;
      if (epoch > UINT32_MAX || seed > UINT32_MAX) {
        return Status::Invalid("epoch " + std::to_string(epoch) + ": seed + epoch = " +
                               std::to_string(static_cast<unsigned long long>(seed_) + epoch) +
                               " is beyond numpy RandomState's range (max 2^32-1)");
      }
      NumpyRandomState state(static_cast<uint32_t>(seed));
      return SingleRank(epoch, NumpyPermutation(num_samples_, state), false, num_samples_);
    }
    if (epoch < next_epoch_) {
      state_ = NumpyRandomState(seed_);
      next_epoch_ = 0;
    }
    for (; next_epoch_ < epoch; ++next_epoch_) NumpySkipPermutation(num_samples_, state_);
    IndexVector order = NumpyPermutation(num_samples_, state_);
    next_epoch_ = epoch + 1;
    return SingleRank(epoch, std::move(order), false, num_samples_);
  }

 private:
  uint32_t seed_;
  NumpyReseed reseed_;
  uint64_t num_samples_;
  NumpyRandomState state_;
  uint64_t next_epoch_ = 0;
};

class NumpyRngSampler : public Sampler {
 public:
  NumpyRngSampler(const PlanSpec& spec, uint64_t num_samples)
      : seed_words_(spec.seed.magnitude), num_samples_(num_samples), bitgen_(seed_words_) {}

  Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) override {
    if (epoch < next_epoch_) {
      bitgen_ = Pcg64(seed_words_);
      next_epoch_ = 0;
    }
    for (; next_epoch_ < epoch; ++next_epoch_) NumpySkipPermutation(num_samples_, bitgen_);
    IndexVector order = NumpyPermutation(num_samples_, bitgen_);
    next_epoch_ = epoch + 1;
    return SingleRank(epoch, std::move(order), false, num_samples_);
  }

 private:
  std::vector<uint32_t> seed_words_;
  uint64_t num_samples_;
  Pcg64 bitgen_;
  uint64_t next_epoch_ = 0;
};

class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(uint64_t num_samples) : num_samples_(num_samples) {}
  Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) override {
    return SingleRank(epoch, IndexVector(), true, num_samples_);
  }

 private:
  uint64_t num_samples_;
};

}  // namespace

uint64_t DistributedSamplesPerRank(uint64_t num_samples, uint32_t world, bool drop_last) {
  if (drop_last && num_samples % world != 0) return num_samples / world;
  return (num_samples + world - 1) / world;
}

Result<std::unique_ptr<Sampler>> MakeSampler(const PlanSpec& spec, uint64_t num_samples) {
  if (num_samples == 0) return Status::Invalid("the dataset has no samples");
  switch (spec.kind) {
    case SamplerKind::kTorchDistributed:
      return std::unique_ptr<Sampler>(new TorchDistributedSampler(spec, num_samples));
    case SamplerKind::kTorchRandom:
      return std::unique_ptr<Sampler>(new TorchRandomSampler(spec, num_samples));
    case SamplerKind::kNumpy:
      return std::unique_ptr<Sampler>(new NumpyLegacySampler(spec, num_samples));
    case SamplerKind::kNumpyRng:
      return std::unique_ptr<Sampler>(new NumpyRngSampler(spec, num_samples));
    case SamplerKind::kSequential:
      return std::unique_ptr<Sampler>(new SequentialSampler(num_samples));
    case SamplerKind::kList:
      break;
  }
  return Status::Invalid("list: plans have no sampler (use ListPlan)");
}

}  // namespace clairfs
