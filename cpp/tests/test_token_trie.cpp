// TokenTrie (token_trie.hpp): the vocabulary as a DFS-ordered byte trie.
//
// Invariants tested:
// - nodes[0] is the root; nodes are in DFS order with children sorted by (unsigned) byte, i.e.
//   node p's path is the p-th distinct token prefix in lexicographic order;
//   subtree_size(p) counts the prefixes extending p's path; num_parents(p) = level(p) -
//   level(p + subtree_size(p)) + 1 with level(end) = 1.
// - a node lists (ascending) every token id spelling its path; empty tokens, special tokens
//   and padding ids (num_tokens .. vocab_size - 1) are never in the trie.
// - token_data/token_length give every token's bytes (special ones too); node_token(p) is a
//   token whose first node_depth(p) bytes are p's path (the first one in p's subtree).
// Checked on a hand-made table and, against a brute-force model, on pseudo-random vocabularies.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "runner.hpp"
#include "tokamata/token_trie.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

std::string token_bytes(const TokenTrie& trie, int32_t token) {
  return std::string(reinterpret_cast<const char*>(trie.token_data(token)), static_cast<size_t>(trie.token_length(token)));
}

// The path of every node, rebuilt by walking the DFS layout with an explicit stack.
std::vector<std::string> node_paths(const TokenTrie& trie) {
  const auto& nodes = trie.nodes();
  std::vector<std::string> paths(nodes.size());
  std::vector<size_t> open{0};  // nodes whose subtree contains the next node
  for (size_t p = 1; p < nodes.size(); ++p) {
    while (!open.empty() && p >= open.back() + nodes[open.back()].subtree_size) open.pop_back();
    if (open.empty()) break;
    paths[p] = paths[open.back()] + static_cast<char>(nodes[p].byte);
    open.push_back(p);
  }
  return paths;
}

struct ExpectedNode {
  std::string path;
  uint32_t subtree_size;
  uint16_t num_parents;
  std::vector<int32_t> tokens;
};

// The brute-force model: sorted distinct prefixes of the text tokens.
std::vector<ExpectedNode> model_of(const Vocabulary& v) {
  auto less = [](const std::string& a, const std::string& b) {
    const int cmp = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
    return cmp != 0 ? cmp < 0 : a.size() < b.size();
  };
  std::set<std::string, decltype(less)> prefixes(less);
  prefixes.insert("");
  std::map<std::string, std::vector<int32_t>> spelled;
  for (int32_t t = 0; t < v.num_tokens(); ++t) {
    if (!v.text[t] || v.tokens[t].empty()) continue;
    for (size_t k = 1; k <= v.tokens[t].size(); ++k) prefixes.insert(v.tokens[t].substr(0, k));
    spelled[v.tokens[t]].push_back(t);
  }
  std::vector<std::string> order(prefixes.begin(), prefixes.end());
  std::vector<ExpectedNode> out;
  for (size_t p = 0; p < order.size(); ++p) {
    ExpectedNode node;
    node.path = order[p];
    uint32_t size = 0;
    for (const std::string& other : order) {
      if (other.compare(0, node.path.size(), node.path) == 0 && other.size() >= node.path.size()) ++size;
    }
    node.subtree_size = size;
    const size_t next = p + size;
    const int level_next = next < order.size() ? static_cast<int>(order[next].size()) : 1;
    node.num_parents = static_cast<uint16_t>(static_cast<int>(node.path.size()) - level_next + 1);
    auto found = spelled.find(node.path);
    if (found != spelled.end() && !node.path.empty()) node.tokens = found->second;
    out.push_back(node);
  }
  return out;
}

void check_against_model(const Vocabulary& v) {
  auto trie = v.trie();
  const std::vector<ExpectedNode> expected = model_of(v);
  const auto& nodes = trie->nodes();
  CHECK_EQ(nodes.size(), expected.size());
  if (nodes.size() != expected.size()) return;
  const std::vector<std::string> paths = node_paths(*trie);
  int32_t longest = 0;
  for (size_t p = 0; p < nodes.size(); ++p) {
    CONTEXT("node " << p << " path " << describe(expected[p].path));
    CHECK_EQ(paths[p], expected[p].path);
    CHECK_EQ(nodes[p].subtree_size, expected[p].subtree_size);
    CHECK_EQ(nodes[p].num_parents, expected[p].num_parents);
    const std::vector<int32_t> ids(trie->token_ids().begin() + nodes[p].token_begin,
                                   trie->token_ids().begin() + nodes[p].token_begin + nodes[p].token_count);
    CHECK_EQ(ids, expected[p].tokens);
    CHECK_EQ(trie->node_depth(p), static_cast<int32_t>(expected[p].path.size()));
    if (nodes.size() > 1) {
      const int32_t token = trie->node_token(p);
      CHECK(token >= 0 && token < v.num_tokens());
      if (token >= 0 && token < v.num_tokens()) {
        CHECK(trie->in_trie(token));
        CHECK_EQ(token_bytes(*trie, token).substr(0, expected[p].path.size()), expected[p].path);
      }
    }
    longest = std::max<int32_t>(longest, static_cast<int32_t>(expected[p].path.size()));
  }
  CHECK_EQ(trie->max_depth(), longest);
  for (int32_t t = 0; t < v.num_tokens(); ++t) {
    CONTEXT("token " << t);
    CHECK_EQ(token_bytes(*trie, t), v.tokens[t]);
    CHECK_EQ(trie->in_trie(t), v.text[t] != 0 && !v.tokens[t].empty());
  }
}

// Ids 0..8 text (4 empty; 1 and 5 share "ab"; 8 a byte above 0x7F), 9 special, 10..11 padding.
Vocabulary hand_vocabulary() { return make_vocabulary({"a", "ab", "abc", "b", "", "ab", "ba", "ac", "\x80"}, {"</s>"}, 2); }

}  // namespace

TEST(trie_hand_table_dfs_order_and_subtrees) {
  const Vocabulary v = hand_vocabulary();
  auto trie = v.trie();
  struct Row {
    std::string path;
    uint8_t byte;
    uint32_t subtree_size;
    uint16_t num_parents;
    std::vector<int32_t> tokens;
    int32_t node_token;
  };
  const std::vector<Row> table = {
      {"", 0, 8, 0, {}, 0},
      {"a", 'a', 4, 1, {0}, 0},
      {"ab", 'b', 2, 1, {1, 5}, 1},
      {"abc", 'c', 1, 2, {2}, 2},
      {"ac", 'c', 1, 2, {7}, 7},
      {"b", 'b', 2, 1, {3}, 3},
      {"ba", 'a', 1, 2, {6}, 6},
      {"\x80", 0x80, 1, 1, {8}, 8},
  };
  const auto& nodes = trie->nodes();
  CHECK_EQ(nodes.size(), table.size());
  const std::vector<std::string> paths = node_paths(*trie);
  for (size_t p = 0; p < std::min(nodes.size(), table.size()); ++p) {
    const Row& row = table[p];
    CONTEXT("node " << p << " path " << describe(row.path));
    CHECK_EQ(paths[p], row.path);
    CHECK_EQ(nodes[p].byte, row.byte);
    CHECK_EQ(nodes[p].subtree_size, row.subtree_size);
    CHECK_EQ(nodes[p].num_parents, row.num_parents);
    const std::vector<int32_t> ids(trie->token_ids().begin() + nodes[p].token_begin,
                                   trie->token_ids().begin() + nodes[p].token_begin + nodes[p].token_count);
    CHECK_EQ(ids, row.tokens);
    CHECK_EQ(trie->node_token(p), row.node_token);
    CHECK_EQ(trie->node_depth(p), static_cast<int32_t>(row.path.size()));
  }
  CHECK_EQ(trie->token_ids(), (std::vector<int32_t>{0, 1, 5, 2, 7, 3, 6, 8}));
  CHECK_EQ(trie->max_depth(), 3);
  CHECK_EQ(trie->num_tokens(), 10);
  CHECK_EQ(trie->vocab_size(), 12);
}

TEST(trie_token_bytes_and_membership) {
  const Vocabulary v = hand_vocabulary();
  auto trie = v.trie();
  struct Row {
    int32_t token;
    std::string bytes;
    bool in_trie;
  };
  const std::vector<Row> table = {
      {0, "a", true},  {1, "ab", true}, {2, "abc", true}, {3, "b", true},   {4, "", false},
      {5, "ab", true}, {6, "ba", true}, {7, "ac", true},  {8, "\x80", true}, {9, "</s>", false},
  };
  for (const Row& row : table) {
    CONTEXT("token " << row.token);
    CHECK_EQ(token_bytes(*trie, row.token), row.bytes);
    CHECK_EQ(trie->token_length(row.token), static_cast<int64_t>(row.bytes.size()));
    CHECK_EQ(trie->in_trie(row.token), row.in_trie);
  }
  // no node lists the empty token, the special token or a padding id
  for (int32_t id : trie->token_ids()) CHECK(id != 4 && id != 9 && id < trie->num_tokens());
}

TEST(trie_matches_the_model_on_pseudo_random_vocabularies) {
  const std::string alphabet = std::string("\x00" "ab\x7f\x80\xff", 6);
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&seed](uint32_t bound) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((seed >> 33) % bound);
  };
  for (int round = 0; round < 40; ++round) {
    CONTEXT("vocabulary " << round);
    std::vector<std::string> texts, specials;
    const uint32_t count = 1 + next(60);
    for (uint32_t i = 0; i < count; ++i) {
      std::string token;
      const uint32_t length = next(6);
      for (uint32_t k = 0; k < length; ++k) token.push_back(alphabet[next(static_cast<uint32_t>(alphabet.size()))]);
      if (next(10) == 0) specials.push_back(token);
      else texts.push_back(token);
    }
    check_against_model(make_vocabulary(texts, specials, static_cast<int32_t>(next(3))));
  }
}

TEST(trie_of_no_text_tokens_is_the_root_alone) {
  auto trie = make_vocabulary({"", ""}, {"<s>"}, 1).trie();
  CHECK_EQ(trie->nodes().size(), 1u);
  CHECK_EQ(trie->nodes()[0].subtree_size, 1u);
  CHECK(trie->token_ids().empty());
  CHECK_EQ(trie->max_depth(), 0);
}

TEST(trie_rejects_bad_sizes) {
  Vocabulary v = hand_vocabulary();
  v.vocab_size = v.num_tokens() - 1;
  CHECK_THROWS(v.trie(), std::invalid_argument);
}

TEST(trie_drop_token_bytes_keeps_the_layout) {
  auto trie = hand_vocabulary().trie();
  const std::vector<int32_t> ids = trie->token_ids();
  std::vector<uint32_t> sizes;
  for (const TrieNode& n : trie->nodes()) sizes.push_back(n.subtree_size);
  trie->drop_token_bytes();
  CHECK_EQ(trie->token_ids(), ids);
  std::vector<uint32_t> after;
  for (const TrieNode& n : trie->nodes()) after.push_back(n.subtree_size);
  CHECK_EQ(after, sizes);
}
