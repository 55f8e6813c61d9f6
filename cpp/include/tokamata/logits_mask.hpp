// Applying a token bitmask to a block of logits in place: logit j of row r becomes -inf
// unless bit j % 32 of word j / 32 of mask row r is set.
//
// Invariants: columns at or past 32 * mask_words become -inf (a narrower bitmask allows
// nothing there); mask words past the logits' columns are not read for anything; allowed
// logits keep their bits. Rows are `logit_stride` elements apart, columns `col_stride` (>= 1;
// 1, contiguous, is the vectorized path) and mask rows `mask_stride` words apart. Logits are handled as their bit patterns (16-bit:
// IEEE half or bfloat16, 32-bit: float, 64-bit: double) with the format's -inf passed in, so
// no float is ever read. Plain loops over caller-owned memory: callers run them without the
// GIL.
#pragma once
#include <cstdint>

namespace tokamata {

// -inf as bits
constexpr uint16_t kHalfNegInf = 0xFC00;
constexpr uint16_t kBfloat16NegInf = 0xFF80;
constexpr uint32_t kFloatNegInf = 0xFF800000u;
constexpr uint64_t kDoubleNegInf = 0xFFF0000000000000ull;

void mask_logits(uint16_t* logits, int64_t rows, int64_t cols, int64_t logit_stride, int64_t col_stride,
                 const uint32_t* mask, int64_t mask_words, int64_t mask_stride, uint16_t neg_inf);
void mask_logits(uint32_t* logits, int64_t rows, int64_t cols, int64_t logit_stride, int64_t col_stride,
                 const uint32_t* mask, int64_t mask_words, int64_t mask_stride, uint32_t neg_inf);
void mask_logits(uint64_t* logits, int64_t rows, int64_t cols, int64_t logit_stride, int64_t col_stride,
                 const uint32_t* mask, int64_t mask_words, int64_t mask_stride, uint64_t neg_inf);

}  // namespace tokamata
