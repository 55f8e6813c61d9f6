// Shared fixtures: small hand-made vocabularies, and a RegexCore over a native DerivativeDfa
// built the way cpp/bindings/core_bindings.cpp's make_native_core builds it (the bindings
// cannot be linked here: they need Python).
//
// Invariants:
// - A Vocabulary lists token id i's bytes and whether it is a text token; ids from
//   tokens.size() to vocab_size - 1 are padding (logit columns with no token).
// - make_native_core registers the DFA's existing states (start states interned before) with
//   deferred keys, exactly as the bindings do; the expander calls lexer->expand(dfa, s, c).
// - every_byte_class() gives 256 one-byte classes, which refine every state's own classes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokamata/derivative_dfa.hpp"
#include "tokamata/token_row.hpp"
#include "tokamata/token_trie.hpp"

namespace tokamata_test {

struct Vocabulary {
  std::vector<std::string> tokens;  // bytes of each token id
  std::vector<uint8_t> text;        // 1: a text token (may go in the trie)
  int32_t vocab_size = 0;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }

  std::shared_ptr<tokamata::TokenTrie> trie() const {
    std::vector<uint8_t> bytes;
    std::vector<int64_t> offsets{0};
    for (const std::string& token : tokens) {
      bytes.insert(bytes.end(), token.begin(), token.end());
      offsets.push_back(static_cast<int64_t>(bytes.size()));
    }
    return std::make_shared<tokamata::TokenTrie>(bytes.data(), offsets.data(), text.data(), num_tokens(), vocab_size);
  }
};

// Text tokens `texts`, then special tokens `specials` (not in the trie), then `padding` ids.
inline Vocabulary make_vocabulary(const std::vector<std::string>& texts, const std::vector<std::string>& specials,
                                  int32_t padding) {
  Vocabulary v;
  for (const std::string& t : texts) {
    v.tokens.push_back(t);
    v.text.push_back(1);
  }
  for (const std::string& s : specials) {
    v.tokens.push_back(s);
    v.text.push_back(0);
  }
  v.vocab_size = v.num_tokens() + padding;
  return v;
}

inline std::vector<int32_t> every_byte_class() {
  std::vector<int32_t> starts(256);
  for (int32_t b = 0; b < 256; ++b) starts[b] = b;
  return starts;
}

// The core the bindings' native_regex_core builds (derivative_dfa.hpp: regex_core_over), without slices.
inline std::shared_ptr<tokamata::RegexCore> make_native_core(std::shared_ptr<const tokamata::TokenTrie> trie,
                                                             std::shared_ptr<tokamata::SharedRowCache> shared,
                                                             std::shared_ptr<tokamata::DerivativeDfa> lexer,
                                                             std::vector<int32_t> eos_ids, int32_t max_states) {
  return tokamata::regex_core_over(std::move(trie), std::move(shared), std::move(lexer), std::move(eos_ids),
                                   max_states);
}

// A DerivativeDfa over `arena` with one class per byte and `node` as state 0.
inline std::shared_ptr<tokamata::DerivativeDfa> make_lexer(std::shared_ptr<tokamata::ExprArena> arena, int32_t node,
                                                           int64_t key_base = 0, int32_t max_states = 10000,
                                                           double max_seconds = 60.0) {
  const std::vector<int32_t> starts = every_byte_class();
  auto lexer = std::make_shared<tokamata::DerivativeDfa>(std::move(arena), starts.data(),
                                                         static_cast<int32_t>(starts.size()), key_base, max_states,
                                                         max_seconds);
  lexer->intern_state(node);
  return lexer;
}

inline bool bit(const std::vector<uint32_t>& bits, int32_t token) { return (bits[token >> 5] >> (token & 31)) & 1u; }

inline std::vector<int32_t> set_bits(const std::vector<uint32_t>& bits) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (int b = 0; b < 32; ++b) {
      if ((bits[w] >> b) & 1u) out.push_back(static_cast<int32_t>(w * 32 + b));
    }
  }
  return out;
}

}  // namespace tokamata_test
