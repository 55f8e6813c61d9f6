// mask_logits (logits_mask.hpp) against a per-column oracle: every width from 0 to 130
// columns (not multiples of 32 included), bitmasks narrower and wider than the row, strided
// rows, columns and mask rows, the three element widths; elements past each row are never written.
#include <cstdint>
#include <vector>

#include "runner.hpp"
#include "tokamata/logits_mask.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

uint32_t next_word(uint64_t& seed) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t x = static_cast<uint32_t>(seed >> 32);
  switch (x % 4) {  // whole-word cases as real masks have, and mixed words
    case 0: return 0u;
    case 1: return 0xFFFFFFFFu;
    default: return x * 2654435761u;
  }
}

template <class U>
void check_width(int64_t cols, int64_t words, U neg_inf, uint64_t& seed, int64_t col_stride = 1) {
  const int64_t rows = 3, stride = cols * col_stride + 5, mask_stride = words + 2;
  std::vector<uint32_t> mask(static_cast<size_t>(rows * mask_stride));
  for (uint32_t& w : mask) w = next_word(seed);
  std::vector<U> logits(static_cast<size_t>(rows * stride));
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<U>(i + 1);
  const std::vector<U> before = logits;
  mask_logits(logits.data(), rows, cols, stride, col_stride, mask.data(), words, mask_stride, neg_inf);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < stride; ++k) {
      const size_t at = static_cast<size_t>(r * stride + k);
      U want = before[at];
      const int64_t j = k / col_stride;  // the column element k is, when k % col_stride == 0
      if (k % col_stride == 0 && j < cols) {
        const bool allowed = j / 32 < words && ((mask[static_cast<size_t>(r * mask_stride + j / 32)] >> (j % 32)) & 1u);
        if (!allowed) want = neg_inf;
      }
      CHECK_EQ(logits[at], want);
    }
  }
}

}  // namespace

TEST(logits_mask_every_width_and_mask_width) {
  uint64_t seed = 11;
  for (int64_t cols = 0; cols <= 130; ++cols) {
    for (int64_t words : {int64_t{0}, (cols + 31) / 32 - 1, (cols + 31) / 32, (cols + 31) / 32 + 2}) {
      if (words < 0) continue;
      CONTEXT("cols " << cols << ", words " << words);
      check_width<uint16_t>(cols, words, kBfloat16NegInf, seed);
      check_width<uint32_t>(cols, words, kFloatNegInf, seed);
      check_width<uint64_t>(cols, words, kDoubleNegInf, seed);
      check_width<uint32_t>(cols, words, kFloatNegInf, seed, 3);  // a record field: llama.cpp's token data
      check_width<uint16_t>(cols, words, kHalfNegInf, seed, 2);
    }
  }
}
