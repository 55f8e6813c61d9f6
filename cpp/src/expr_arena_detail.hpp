// Helpers shared by the four files of the expression arena (expr_arena.cpp: interning,
// constructors and import; expr_derivatives.cpp: byte classes and derivatives; expr_facts.cpp:
// emptiness and the facts lexers and slices read; expr_leaves.cpp: the text-until,
// decimal-divisibility and substring leaves). Internal to cpp/src: not a public header.
#pragma once

#include <cstdint>

#include "tokamata/expr_arena.hpp"

namespace tokamata {
namespace arena_detail {

constexpr int32_t kUnknownId = -2;

struct LeadRange {  // lead byte range, continuation count, valid code points
  int32_t lead_lo, lead_hi, count, valid_lo, valid_hi;
};
constexpr LeadRange kLeadRanges[3] = {
    {0xC2, 0xDF, 1, 0x80, 0x7FF},
    {0xE0, 0xEF, 2, 0x800, 0xFFFF},
    {0xF0, 0xF4, 3, 0x10000, 0x10FFFF},
};
// the characters a JSON string takes unescaped (slices._TEXT_CHARACTERS)
constexpr int32_t kTextCharacters[4][2] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, 0x10FFFF}};
constexpr int64_t kLongLength = int64_t{1} << 60;  // lengths saturate here (only finiteness matters)

inline bool mask_has(const ExprArena::ByteMask& mask, int32_t byte) { return (mask[byte >> 6] >> (byte & 63)) & 1; }

inline void set_range(ExprArena::ByteMask& mask, int32_t lo, int32_t hi) {
  for (int32_t b = lo; b <= hi; ++b) mask[b >> 6] |= uint64_t{1} << (b & 63);
}

inline ExprArena::ByteMask continuation_mask() {
  ExprArena::ByteMask mask{0, 0, 0, 0};
  set_range(mask, 0x80, 0xBF);
  return mask;
}

}  // namespace arena_detail
}  // namespace tokamata
