// Builds the DFS-ordered token trie; see token_trie.hpp for the invariants.
#include "tokamata/token_trie.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tokamata {

TokenTrie::TokenTrie(const uint8_t* token_bytes, const int64_t* offsets, const uint8_t* in_trie,
                     int32_t num_tokens, int32_t vocab_size)
    : num_tokens_(num_tokens), vocab_size_(vocab_size) {
  if (num_tokens < 0 || vocab_size < num_tokens) throw std::invalid_argument("bad vocabulary sizes");
  const int64_t total = offsets[num_tokens];
  bytes_.assign(token_bytes, token_bytes + total);
  offsets_.assign(offsets, offsets + num_tokens + 1);
  in_trie_.assign(in_trie, in_trie + num_tokens);

  std::vector<int32_t> order;
  order.reserve(num_tokens);
  for (int32_t t = 0; t < num_tokens; ++t) {
    if (in_trie_[t] && token_length(t) > 0) {
      if (token_length(t) > kMaxTokenBytes) throw std::invalid_argument("a token is longer than 65,000 bytes");
      order.push_back(t);
    } else {
      in_trie_[t] = 0;
    }
  }
  auto less = [this](int32_t a, int32_t b) {
    const int64_t la = token_length(a), lb = token_length(b);
    const int cmp = std::memcmp(token_data(a), token_data(b), static_cast<size_t>(std::min(la, lb)));
    if (cmp != 0) return cmp < 0;
    if (la != lb) return la < lb;
    return a < b;
  };
  std::sort(order.begin(), order.end(), less);

  // Walk the sorted tokens; the path of the previous token is the current DFS stack.
  std::vector<int32_t> levels;             // level of each node
  std::vector<int32_t> path;               // node index per depth (path[0] = root)
  nodes_.push_back(TrieNode{0, 0, 0, 0, 0});
  levels.push_back(0);
  path.push_back(0);
  std::vector<std::vector<int32_t>> node_tokens(1);
  for (int32_t t : order) {
    const uint8_t* data = token_data(t);
    const int64_t len = token_length(t);
    // length of the common prefix with the current path
    int64_t common = 0;
    while (common < len && common + 1 < static_cast<int64_t>(path.size()) &&
           nodes_[path[common + 1]].byte == data[common]) {
      ++common;
    }
    path.resize(common + 1);
    for (int64_t i = common; i < len; ++i) {
      nodes_.push_back(TrieNode{0, 0, 0, 0, data[i]});
      levels.push_back(static_cast<int32_t>(i + 1));
      node_tokens.emplace_back();
      path.push_back(static_cast<int32_t>(nodes_.size() - 1));
    }
    node_tokens[path[len]].push_back(t);
    if (node_tokens[path[len]].size() > 0xFFFF) throw std::invalid_argument("more than 65,535 tokens share the same bytes");
    max_depth_ = std::max<int32_t>(max_depth_, static_cast<int32_t>(len));
  }
  const int32_t n = static_cast<int32_t>(nodes_.size());
  // subtree sizes: a node's subtree ends at the next node whose level is <= its own
  std::vector<int32_t> stack;
  for (int32_t p = 0; p <= n; ++p) {
    const int32_t level = p < n ? levels[p] : -1;
    while (!stack.empty() && levels[stack.back()] >= level) {
      nodes_[stack.back()].subtree_size = static_cast<uint32_t>(p - stack.back());
      stack.pop_back();
    }
    if (p < n) stack.push_back(p);
  }
  for (int32_t p = 0; p < n; ++p) {
    const int32_t next = p + static_cast<int32_t>(nodes_[p].subtree_size);
    const int32_t next_level = next < n ? levels[next] : 1;
    nodes_[p].num_parents = static_cast<uint16_t>(levels[p] - next_level + 1);
    nodes_[p].token_begin = static_cast<int32_t>(token_ids_.size());
    nodes_[p].token_count = static_cast<uint16_t>(node_tokens[p].size());
    token_ids_.insert(token_ids_.end(), node_tokens[p].begin(), node_tokens[p].end());
  }
  // a token whose bytes start with each node's path (the first one in the subtree)
  node_token_.assign(static_cast<size_t>(n), -1);
  node_depth_.assign(static_cast<size_t>(n), 0);
  for (int32_t p = n - 1; p >= 0; --p) {
    node_depth_[p] = static_cast<uint16_t>(levels[p]);
    if (nodes_[p].token_count > 0) {
      node_token_[p] = token_ids_[nodes_[p].token_begin];
    } else if (p + 1 < n && nodes_[p].subtree_size > 1) {
      node_token_[p] = node_token_[p + 1];
    }
  }
}

int64_t TokenTrie::find(const uint8_t* data, int64_t length, size_t from) const {
  size_t p = from;
  for (int64_t i = 0; i < length; ++i) {
    const size_t end = p + nodes_[p].subtree_size;
    size_t child = p + 1;
    while (child < end && nodes_[child].byte < data[i]) child += nodes_[child].subtree_size;  // sorted by byte
    if (child >= end || nodes_[child].byte != data[i]) return -1;
    p = child;
  }
  return static_cast<int64_t>(p);
}

const TokenTrie::SubtreeBytes& TokenTrie::subtree_bytes() const {
  std::call_once(subtree_bytes_once_, [this] {
    auto out = std::make_unique<SubtreeBytes>();
    const size_t n = nodes_.size();
    std::vector<std::array<uint64_t, 4>> below(n, std::array<uint64_t, 4>{0, 0, 0, 0});
    for (size_t p = n; p-- > 0;) {  // children come after their parent: they are done first
      const size_t end = p + nodes_[p].subtree_size;
      for (size_t child = p + 1; child < end; child += nodes_[child].subtree_size) {
        for (int w = 0; w < 4; ++w) below[p][w] |= below[child][w];
        below[p][nodes_[child].byte >> 6] |= 1ull << (nodes_[child].byte & 63);
      }
    }
    for (size_t p = 0; p < n; ++p) {
      if (nodes_[p].subtree_size < kBytesSubtree) continue;
      out->nodes.push_back(static_cast<uint32_t>(p));
      out->bytes.push_back(below[p]);
    }
    subtree_bytes_ = std::move(out);
  });
  return *subtree_bytes_;
}

void TokenTrie::drop_token_bytes() {
  std::vector<uint8_t>().swap(bytes_);
  std::vector<int64_t>().swap(offsets_);
  std::vector<uint8_t>().swap(in_trie_);
  std::vector<int32_t>().swap(node_token_);
  std::vector<uint16_t>().swap(node_depth_);
}

}  // namespace tokamata
