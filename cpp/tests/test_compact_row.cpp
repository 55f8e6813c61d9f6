// TokenRow's compact forms (compact_row.hpp): random rows of every density, sealed dense, over
// zeros, over ones and over a base row, answer every reader (word, test, copy_to, or_into,
// for_each_token, any_token, first_token, for_each_nonzero_word, to_words) exactly as their
// dense words do; equal contents compare and hash equal whatever the form; the form chosen
// is the smallest, and a patched row takes at most a quarter of the dense bytes.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "runner.hpp"
#include "tokamata/compact_row.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

// A row of `words` words where each bit is set with probability `density`; with `near`, a
// copy of `near` with about `flips` words changed instead.
std::vector<uint32_t> random_words(std::mt19937& rng, size_t words, double density,
                                   const std::vector<uint32_t>* near = nullptr, size_t flips = 0) {
  std::vector<uint32_t> out(words, 0u);
  if (near) {
    out = *near;
    for (size_t k = 0; k < flips; ++k) out[rng() % words] ^= 1u << (rng() % 32);
    return out;
  }
  std::bernoulli_distribution on(density);
  // whole words at the extremes too: dense rows of all-ones words, sparse rows of zero words
  for (size_t w = 0; w < words; ++w) {
    if (density >= 0.9 && on(rng)) {
      out[w] = ~0u;
      continue;
    }
    for (int b = 0; b < 32; ++b) {
      if (on(rng)) out[w] |= 1u << b;
    }
  }
  return out;
}

std::shared_ptr<TokenRow> sealed(const std::vector<uint32_t>& words, const RowBases* bases, bool accepting = false) {
  auto row = std::make_shared<TokenRow>(words.size());
  std::copy(words.begin(), words.end(), row->words());
  row->accepting = accepting;
  row->seal(bases);
  return row;
}

std::vector<int32_t> tokens_of(const std::vector<uint32_t>& words) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < words.size(); ++w) {
    for (int b = 0; b < 32; ++b) {
      if ((words[w] >> b) & 1u) out.push_back(static_cast<int32_t>(w * 32 + b));
    }
  }
  return out;
}

void check_readers(const TokenRow& row, const std::vector<uint32_t>& words, std::mt19937& rng) {
  const size_t n = words.size();
  CHECK_EQ(row.num_words(), n);
  CHECK_EQ(row.to_words(), words);
  for (size_t w = 0; w < n; ++w) CHECK_EQ(row.word(w), words[w]);
  for (int32_t t = 0; t < static_cast<int32_t>(n * 32) + 70; ++t) {
    const bool expected = static_cast<size_t>(t >> 5) < n && ((words[static_cast<size_t>(t >> 5)] >> (t & 31)) & 1u);
    if (row.test(t) != expected) {
      FAIL("test(" + std::to_string(t) + ")");
      break;
    }
  }
  for (size_t size : {size_t{0}, n / 3, n, n + 5}) {  // copy_to: the row's words, then zeros
    std::vector<uint32_t> out(size + 1, 0xA5A5A5A5u);
    row.copy_to(out.data(), size);
    for (size_t i = 0; i < size; ++i) CHECK_EQ(out[i], i < n ? words[i] : 0u);
    CHECK_EQ(out[size], 0xA5A5A5A5u);  // nothing written past n words
  }
  std::vector<uint32_t> before(n + 1);
  for (uint32_t& x : before) x = rng() & rng();
  std::vector<uint32_t> ored = before;
  row.or_into(ored.data());
  for (size_t i = 0; i < n; ++i) CHECK_EQ(ored[i], before[i] | words[i]);
  CHECK_EQ(ored[n], before[n]);
  const std::vector<int32_t> tokens = tokens_of(words);
  std::vector<int32_t> seen;
  row.for_each_token([&](int32_t t) { seen.push_back(t); });
  CHECK_EQ(seen, tokens);
  CHECK_EQ(row.first_token(), tokens.empty() ? -1 : tokens[0]);
  if (!tokens.empty()) {  // any_token stops at the first true
    const size_t stop = rng() % tokens.size();
    std::vector<int32_t> visited;
    const bool stopped = row.any_token([&](int32_t t) {
      visited.push_back(t);
      return t == tokens[stop];
    });
    CHECK(stopped);
    CHECK_EQ(visited, std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<long>(stop) + 1));
  }
  CHECK(!row.any_token([](int32_t) { return false; }));
  std::vector<std::pair<size_t, uint32_t>> nonzero, expected_nonzero;
  row.for_each_nonzero_word([&](size_t i, uint32_t x) { nonzero.emplace_back(i, x); });
  for (size_t i = 0; i < n; ++i) {
    if (words[i]) expected_nonzero.emplace_back(i, words[i]);
  }
  CHECK(nonzero == expected_nonzero);
}

}  // namespace

TEST(compact_row_every_form_reads_as_its_dense_words) {
  std::mt19937 rng(20261127);
  for (size_t n : {size_t{1}, size_t{3}, size_t{64}, size_t{257}}) {
    // bases: two random dense rows of the width
    RowBases bases;
    std::vector<std::vector<uint32_t>> base_words;
    for (double d : {0.5, 0.97}) {
      base_words.push_back(random_words(rng, n, d));
      auto base = std::make_shared<TokenRow>(n);
      std::copy(base_words.back().begin(), base_words.back().end(), base->words());
      base->seal_dense();
      bases.push_back(base);
    }
    for (int round = 0; round < 40; ++round) {
      const double density = std::vector<double>{0.0, 0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0}[round % 8];
      std::vector<uint32_t> words = round % 5 == 4
                                        ? random_words(rng, n, 0, &base_words[rng() % 2], rng() % (n / 4 + 2))
                                        : random_words(rng, n, density);
      CONTEXT("width " << n << ", round " << round << ", density " << density);
      auto plain = sealed(words, nullptr);
      auto based = sealed(words, &bases, true);
      check_readers(*plain, words, rng);
      check_readers(*based, words, rng);
      // a building row reads as dense too
      TokenRow building(n);
      std::copy(words.begin(), words.end(), building.words());
      check_readers(building, words, rng);
      // one content, one answer: equal whatever the forms, and the hash ignores the form
      CHECK(plain->same_bits(*based));
      CHECK(based->same_bits(building));
      auto with_acceptance = sealed(words, nullptr, true);
      CHECK_EQ(DistinctRows::content_hash(*with_acceptance), DistinctRows::content_hash(*based));
      if (n > 1) {
        std::vector<uint32_t> other = words;
        other[rng() % n] ^= 1u << (rng() % 32);
        CHECK(!plain->same_bits(*sealed(other, &bases)));
      }
      // the smallest form: patched only with at most num_words / 8 patches
      size_t nonzero = 0, not_ones = 0;
      for (uint32_t x : words) nonzero += x != 0u, not_ones += x != ~0u;
      size_t best = std::min(nonzero, not_ones);
      const size_t most = n / TokenRow::kPatchDivisor;
      CHECK_EQ(plain->dense(), best > most);
      if (!plain->dense()) CHECK_EQ(plain->num_patches(), best);
      CHECK(based->dense() || based->num_patches() <= std::min(best, most));
      if (!based->dense()) CHECK(based->memory_bytes() <= sizeof(TokenRow) + n * 4 / TokenRow::kPatchDivisor * 2);
    }
  }
}

TEST(compact_row_string_like_rows_patch_a_base) {
  // a row equal to a base but for a few words is stored as those words
  std::mt19937 rng(7);
  const size_t n = 4008;  // Llama 3's 128,256 tokens
  std::vector<uint32_t> base_words = random_words(rng, n, 0.7);
  auto base = std::make_shared<TokenRow>(n);
  std::copy(base_words.begin(), base_words.end(), base->words());
  base->seal_dense();
  RowBases bases{base};
  std::vector<uint32_t> words = random_words(rng, n, 0, &base_words, 100);
  auto row = sealed(words, &bases);
  CHECK(!row->dense());
  CHECK(row->num_patches() <= 100);
  CHECK(row->memory_bytes() < n * 4 / 10);
  check_readers(*row, words, rng);
  CHECK(sealed(words, nullptr)->dense());  // without the base: dense
}

TEST(compact_row_is_sealed_once) {
  TokenRow row(4);
  row.set(5);
  row.seal();
  CHECK_THROWS(row.words(), std::logic_error);
  CHECK_THROWS(row.seal(), std::logic_error);
  CHECK(row.test(5));
  CHECK(!row.test(4));
  CHECK(!row.test(1000));
}

TEST(compact_row_base_set_keeps_near_rows_as_bases) {
  // the first rows a base set seals that would need many patches stay dense and become bases
  // (at most kOwnBases); a later row close to one is that row plus a few patches
  std::mt19937 rng(11);
  const size_t n = 1024;
  RowBaseSet set;
  std::vector<std::vector<uint32_t>> firsts;
  for (size_t i = 0; i < RowBaseSet::kOwnBases + 2; ++i) {
    firsts.push_back(random_words(rng, n, 0.6));
    auto row = std::make_shared<TokenRow>(n);
    std::copy(firsts.back().begin(), firsts.back().end(), row->words());
    auto done = set.seal(row);
    CHECK(done->dense());
    const size_t own = std::min<size_t>(i + 1, RowBaseSet::kOwnBases);
    CHECK_EQ(set.snapshot()->size(), own);
  }
  for (size_t i = 0; i < firsts.size(); ++i) {
    CONTEXT("near row " << i);
    std::vector<uint32_t> near = random_words(rng, n, 0, &firsts[i], 5);
    auto row = std::make_shared<TokenRow>(n);
    std::copy(near.begin(), near.end(), row->words());
    auto done = set.seal(row);
    if (i < RowBaseSet::kOwnBases) {
      CHECK(!done->dense());
      CHECK(done->num_patches() <= 5);
    } else {
      CHECK(done->dense());  // its first was no base: no room was left
    }
    check_readers(*done, near, rng);
  }
  // a row with more than kManyPatches patches over every base, once the set is full: patched
  std::vector<uint32_t> far = random_words(rng, n, 0, &firsts[0], 100);
  auto row = std::make_shared<TokenRow>(n);
  std::copy(far.begin(), far.end(), row->words());
  auto done = set.seal(row);
  CHECK(!done->dense());
  check_readers(*done, far, rng);
}
