// DistinctRows (token_row.hpp): equal rows (bits and acceptance) come back as one object while
// it is alive, different ones never do; rows nobody holds expire and their entries are purged
// as the table grows (its size stays bounded by twice the live rows plus a constant).
#include <cstdint>
#include <memory>
#include <vector>

#include "runner.hpp"
#include "tokamata/token_row.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

std::shared_ptr<TokenRow> make_row(size_t words, std::vector<std::pair<size_t, uint32_t>> set, bool accepting) {
  auto row = std::make_shared<TokenRow>(words);
  for (auto [w, v] : set) row->words()[w] = v;
  row->accepting = accepting;
  row->seal();
  return row;
}

std::shared_ptr<const TokenRow> intern(DistinctRows& table, std::shared_ptr<const TokenRow> row) {
  const uint64_t hash = DistinctRows::content_hash(*row);
  return table.intern(std::move(row), hash);
}

}  // namespace

TEST(rows_distinct_equal_rows_are_shared) {
  DistinctRows table;
  auto first = intern(table, make_row(64, {{3, 0x10u}}, false));
  auto again = intern(table, make_row(64, {{3, 0x10u}}, false));
  CHECK(first == again);
  auto dense = intern(table, make_row(64, {{0, 1u}, {1, 2u}, {2, 3u}, {3, 4u}, {5, 9u}}, true));
  auto dense_again = intern(table, make_row(64, {{0, 1u}, {1, 2u}, {2, 3u}, {3, 4u}, {5, 9u}}, true));
  CHECK(dense == dense_again);
  CHECK(dense->num_patches() == 5);
}

TEST(rows_distinct_different_rows_are_not) {
  DistinctRows table;
  auto a = intern(table, make_row(64, {{3, 0x10u}}, false));
  auto b = intern(table, make_row(64, {{3, 0x10u}}, true));   // acceptance differs
  auto c = intern(table, make_row(64, {{3, 0x20u}}, false));  // one bit differs
  auto d = intern(table, make_row(64, {{4, 0x10u}}, false));  // the same word value elsewhere
  auto e = intern(table, make_row(65, {{3, 0x10u}}, false));  // another width
  CHECK(a != b);
  CHECK(a != c);
  CHECK(a != d);
  CHECK(a != e);
  CHECK(b->accepting && !a->accepting);
}

TEST(rows_distinct_expired_rows_are_purged) {
  DistinctRows table;
  std::vector<std::shared_ptr<const TokenRow>> kept;
  for (uint32_t i = 1; i <= 1000; ++i) {
    auto row = intern(table, make_row(64, {{i % 64, i}}, false));
    if (i % 100 == 0) kept.push_back(row);  // the rest expire at once
  }
  CHECK(table.size() <= 2 * kept.size() + 64 + 1);
  for (uint32_t i = 100; i <= 1000; i += 100) {  // the live ones are still found
    auto row = intern(table, make_row(64, {{i % 64, i}}, false));
    CHECK(row == kept[i / 100 - 1]);
  }
  // a row that expired is not handed out: a new equal one becomes the stored one
  auto gone = intern(table, make_row(64, {{1, 1u}}, false));
  CHECK(gone->word(1) == 1u);
}
