// mask_logits (see logits_mask.hpp): one pass per row over the mask words. A word with every
// bit set is skipped, a zero word is a fill of 32 -inf values, and a mixed word a select per
// column, which the compiler vectorizes.
#include "tokamata/logits_mask.hpp"

#include <algorithm>
#include <limits>

namespace tokamata {

namespace {

template <class T>
void mask_row(T* logits, int64_t cols, const uint32_t* mask, int64_t mask_words, T neg_inf) {
  const int64_t full_words = std::min(mask_words, cols / 32);
  for (int64_t w = 0; w < full_words; ++w) {
    const uint32_t bits = mask[w];
    T* block = logits + w * 32;
    if (bits == 0xFFFFFFFFu) continue;
    if (bits == 0) {
      std::fill(block, block + 32, neg_inf);
      continue;
    }
    for (int b = 0; b < 32; ++b) block[b] = ((bits >> b) & 1u) ? block[b] : neg_inf;
  }
  int64_t done = full_words * 32;
  if (done < cols && full_words < mask_words) {  // a last word covering the row's end
    const uint32_t bits = mask[full_words];
    for (int64_t j = done; j < cols; ++j) {
      if (!((bits >> (j - done)) & 1u)) logits[j] = neg_inf;
    }
    done = cols;
  }
  std::fill(logits + done, logits + cols, neg_inf);  // past the bitmask's width
}

template <class T>
void mask_rows(T* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
               int64_t mask_words, int64_t mask_stride, T neg_inf) {
  for (int64_t r = 0; r < rows; ++r) {
    mask_row(logits + r * logit_stride, cols, mask + r * mask_stride, mask_words, neg_inf);
  }
}

}  // namespace

void mask_logits(float* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride) {
  mask_rows(logits, rows, cols, logit_stride, mask, mask_words, mask_stride, -std::numeric_limits<float>::infinity());
}

void mask_logits(double* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride) {
  mask_rows(logits, rows, cols, logit_stride, mask, mask_words, mask_stride, -std::numeric_limits<double>::infinity());
}

void mask_logits(uint16_t* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride, uint16_t neg_inf) {
  mask_rows(logits, rows, cols, logit_stride, mask, mask_words, mask_stride, neg_inf);
}

}  // namespace tokamata
