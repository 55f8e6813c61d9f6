// The vocabulary as a byte trie laid out in DFS order (seed 001, "Token trie").
//
// Invariants:
// - nodes[0] is the root (no byte). For every node p, nodes[p + subtree_size(p)] is the
//   first node after p's subtree; num_parents(p) = level(p) - level(next) + 1 is how many
//   states to pop after visiting p as a leaf (next = p + subtree_size(p); level(end) = 1).
// - Children are sorted by byte, so DFS order is the lexicographic order of token bytes.
// - A node lists every token id whose bytes spell the path to it (several ids may share
//   bytes). Only text tokens are in the trie: special tokens and padding never are.
// - Token bytes are kept (one buffer + offsets, indexed by token id) for consume().
// - subtree_bytes() lists the nodes whose subtree has at least kBytesSubtree nodes, ascending,
//   each with the set of bytes on the edges strictly below it (computed once, on first use):
//   a walk whose state no such byte changes may take the whole subtree without walking it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace tokamata {

// Levels and token counts are stored in 16 bits.
constexpr int64_t kMaxTokenBytes = 65000;

struct TrieNode {
  uint32_t subtree_size;
  int32_t token_begin;   // index into token_ids
  uint16_t token_count;
  uint16_t num_parents;
  uint8_t byte;
};

class TokenTrie {
 public:
  // token_bytes[offsets[i]:offsets[i+1]] are the bytes of token id i, for i < num_tokens;
  // in_trie[i] != 0 marks text tokens. vocab_size >= num_tokens counts logit columns.
  TokenTrie(const uint8_t* token_bytes, const int64_t* offsets, const uint8_t* in_trie,
            int32_t num_tokens, int32_t vocab_size);

  const std::vector<TrieNode>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  int32_t vocab_size() const { return vocab_size_; }
  int32_t num_tokens() const { return num_tokens_; }
  int32_t max_depth() const { return max_depth_; }
  bool in_trie(int32_t token) const { return in_trie_[token] != 0; }
  const uint8_t* token_data(int32_t token) const { return bytes_.data() + offsets_[token]; }
  int64_t token_length(int32_t token) const { return offsets_[token + 1] - offsets_[token]; }
  // The bytes of the path to node p: the first node_depth(p) bytes of node_token(p).
  int32_t node_token(size_t p) const { return node_token_[p]; }
  int32_t node_depth(size_t p) const { return node_depth_[p]; }
  // The node whose path is node `from`'s path then data[0, length) (`from` itself for
  // length 0), or -1 when no token starts with those bytes. Walks one path: at most 256
  // children per byte.
  int64_t find(const uint8_t* data, int64_t length, size_t from = 0) const;
  // The constructor's inputs, for building tries over subsets of the same tokens.
  const uint8_t* bytes_data() const { return bytes_.data(); }
  const int64_t* offsets_data() const { return offsets_.data(); }
  // Frees the token bytes of a trie that is only ever walked (token_data, token_length,
  // in_trie and node paths must not be used afterwards).
  void drop_token_bytes();
  // The nodes with at least kBytesSubtree nodes in their subtree (ascending) and, for each,
  // the bytes strictly below it as a 256-bit set (bit b of word b / 64). Thread-safe.
  static constexpr uint32_t kBytesSubtree = 8;
  struct SubtreeBytes {
    std::vector<uint32_t> nodes;
    std::vector<std::array<uint64_t, 4>> bytes;
  };
  const SubtreeBytes& subtree_bytes() const;

 private:
  std::vector<TrieNode> nodes_;
  std::vector<int32_t> token_ids_;
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> offsets_;
  std::vector<uint8_t> in_trie_;
  std::vector<int32_t> node_token_;
  std::vector<uint16_t> node_depth_;
  int32_t num_tokens_;
  int32_t vocab_size_;
  int32_t max_depth_ = 0;
  mutable std::once_flag subtree_bytes_once_;
  mutable std::unique_ptr<SubtreeBytes> subtree_bytes_;
};

}  // namespace tokamata
