// Applying a token bitmask to a block of logits in place: logit j of row r becomes -inf
// unless bit j % 32 of word j / 32 of mask row r is set.
//
// Invariants: columns at or past 32 * mask_words become -inf (a narrower bitmask allows
// nothing there); mask words past the logits' columns are not read for anything; allowed
// logits are never written. Rows are `logit_stride` elements apart (columns contiguous) and
// mask rows `mask_stride` words apart. Element types are float, double and 16-bit floats
// (IEEE half and bfloat16, written through their bit patterns). Plain loops over caller-owned
// memory: callers run them without the GIL.
#pragma once
#include <cstdint>

namespace tokamata {

// -inf as a 16-bit float's bits
constexpr uint16_t kHalfNegInf = 0xFC00;
constexpr uint16_t kBfloat16NegInf = 0xFF80;

void mask_logits(float* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride);
void mask_logits(double* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride);
// 16-bit floats: `neg_inf` is the format's -inf (kHalfNegInf or kBfloat16NegInf).
void mask_logits(uint16_t* logits, int64_t rows, int64_t cols, int64_t logit_stride, const uint32_t* mask,
                 int64_t mask_words, int64_t mask_stride, uint16_t neg_inf);

}  // namespace tokamata
