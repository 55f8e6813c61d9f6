// Sealing a token row into its compact form, comparing and interning rows; see compact_row.hpp.
#include "tokamata/compact_row.hpp"

namespace tokamata {

namespace {
// Below this many differing words a row base is not looked for (it would save under 256 bytes).
constexpr size_t kTryBasesAbove = 32;
// Words compared between checks of the early exit in the base search.
constexpr size_t kBlock = 256;
}  // namespace

bool TokenRow::seal(const RowBases* bases, size_t dense_above) {
  if (sealed_) throw std::logic_error("a token row is sealed once");
  sealed_ = true;
  const size_t n = num_words_;
  const uint32_t* w = words_.data();
  size_t nonzero = 0, not_ones = 0;
  for (size_t i = 0; i < n; ++i) {
    nonzero += w[i] != 0u;
    not_ones += w[i] != ~0u;
  }
  // patched only with at most n / kPatchDivisor patches (8 bytes each against 4 per word)
  Kind best = Kind::kDense;
  size_t best_count = n / kPatchDivisor + 1;
  const TokenRow* base = nullptr;
  if (nonzero < best_count) best = Kind::kZeroBase, best_count = nonzero;
  if (not_ones < best_count) best = Kind::kOnesBase, best_count = not_ones;
  if (bases && best_count > kTryBasesAbove) {
    for (const auto& candidate : *bases) {
      if (!candidate || candidate->num_words_ != n || candidate->kind_ != Kind::kDense) continue;
      const uint32_t* b = candidate->words_.data();
      size_t differ = 0;
      for (size_t i = 0; i < n && differ < best_count; i += kBlock) {  // (blocks: a vectorized count)
        const size_t end = std::min(n, i + kBlock);
        for (size_t j = i; j < end; ++j) differ += w[j] != b[j];
      }
      if (differ < best_count) best = Kind::kRowBase, best_count = differ, base = candidate.get();
    }
  }
  if (best == Kind::kDense || best_count > dense_above) {
    sum_ = dense_sum(w, n);
    return true;
  }
  kind_ = best;
  if (base) {
    for (const auto& candidate : *bases) {
      if (candidate.get() == base) base_ = candidate;
    }
  }
  std::vector<uint32_t> index, values;
  index.reserve(best_count);
  values.reserve(best_count);
  uint64_t sum = kind_ == Kind::kRowBase ? base->sum_ : 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t under = base_word(i);
    if (kind_ == Kind::kOnesBase) sum += word_mix(i, w[i]);
    if (w[i] != under) {
      index.push_back(static_cast<uint32_t>(i));
      values.push_back(w[i]);
      if (kind_ != Kind::kOnesBase) sum += word_mix(i, w[i]) - word_mix(i, under);
    }
  }
  sum_ = sum;
  index_ = std::move(index);
  words_ = std::move(values);
  return false;
}

std::shared_ptr<const TokenRow> RowBaseSet::seal(std::shared_ptr<TokenRow> row) {
  std::shared_ptr<const RowBases> bases;
  bool room;
  {
    std::lock_guard<std::mutex> guard(mu_);
    bases = bases_;
    room = own_ < kOwnBases;
  }
  const bool dense = row->seal(bases.get(), room ? kManyPatches : SIZE_MAX);
  if (dense && room) {
    std::lock_guard<std::mutex> guard(mu_);
    if (own_ < kOwnBases) {
      auto next = std::make_shared<RowBases>();
      next->reserve(bases_->size() + 1);
      next->push_back(row);
      next->insert(next->end(), bases_->begin(), bases_->end());
      bases_ = std::move(next);
      ++own_;
    }
  }
  return row;
}

bool TokenRow::same_bits(const TokenRow& other) const {
  if (num_words_ != other.num_words_) return false;
  if (kind_ == other.kind_ && base_ == other.base_) {
    return kind_ == Kind::kDense ? words_ == other.words_ : index_ == other.index_ && words_ == other.words_;
  }
  return to_words() == other.to_words();  // (different forms of one content: not met with one set of bases)
}

uint64_t DistinctRows::content_hash(const TokenRow& row) {
  uint64_t h = (row.content_sum() ^ (static_cast<uint64_t>(row.num_words()) << 1) ^ row.accepting) *
               0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

std::shared_ptr<const TokenRow> DistinctRows::intern(std::shared_ptr<const TokenRow> row, uint64_t hash) {
  auto [first, last] = rows_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    std::shared_ptr<const TokenRow> seen = it->second.lock();
    if (seen && seen->accepting == row->accepting && seen->num_allowed == row->num_allowed && seen->same_bits(*row)) {
      return seen;
    }
  }
  if (rows_.size() >= purge_at_) {
    for (auto it = rows_.begin(); it != rows_.end();) it = it->second.expired() ? rows_.erase(it) : std::next(it);
    purge_at_ = 2 * rows_.size() + 64;
  }
  rows_.emplace(hash, row);
  return row;
}

}  // namespace tokamata
