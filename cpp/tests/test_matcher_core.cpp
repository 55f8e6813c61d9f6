// ConstraintCore with no GrammarCore (the regular strategy) and MatcherCore (matcher_core.hpp).
//
// Invariants tested, for T = (ab|c)+ over a small vocabulary with two EOS ids, with
// accepts_empty false (language T) and true (language (ab|c)*):
// - fill sets a text token iff the output plus its bytes is a live prefix, EOS ids iff the
//   output is a sentence (the empty output too when accepts_empty), nothing else (special,
//   empty and padding ids never), and clears the words past the vocabulary.
// - consume accepts a token iff fill sets its bit; refusals leave the position unchanged; ids
//   outside [0, vocab_size) are kOutOfRange.
// - after EOS the matcher is terminated: fill sets only EOS ids, every consume is refused,
//   is_accepting is true, and EOS counts in history_length.
// - rollback(n) restores exactly the position n tokens ago (EOS counts as a token) and returns
//   how many were undone; a copy is independent of its original.
// - fill_if_cached / consume_if_cached answer only from what is cached (false / -1 and no
//   change otherwise) and then agree with fill / consume.
// - a ConstraintCore is shared by threads (one MatcherCore each): concurrent walks over a fresh
//   constraint, whose rows are computed while others read them, see the same masks.
// - step(token, row) (a batch's step) is consume then fill; on the worker pool, with the
//   matchers consumed on one thread and filled on another at alternate steps (the mask a
//   consume retires is released by the next fill, on the filling thread), the rows are the
//   oracle's.
// The oracle is a hand-written recognizer of (ab|c)* (greedy: "ab" and "c" start differently).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixtures.hpp"
#include "regex_oracle.hpp"
#include "runner.hpp"
#include "tokamata/matcher_core.hpp"
#include "tokamata/worker_pool.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

// Ids: a b c ab ca abc cc bc d "" = 0..9 (text), <eos> <x> <eot> = 10..12, padding 13..14.
const std::vector<std::string> kTexts = {"a", "b", "c", "ab", "ca", "abc", "cc", "bc", "d", ""};
const std::vector<int32_t> kEos = {10, 12};
constexpr int32_t kOther = 11;  // a special token that is not EOS
constexpr int32_t kVocabSize = 15;

int32_t id_of(const std::string& text) {
  return static_cast<int32_t>(std::find(kTexts.begin(), kTexts.end(), text) - kTexts.begin());
}

// How far (ab|c)* reads w: the length of its longest prefix in (ab|c)*.
size_t parsed(const std::string& w) {
  size_t i = 0;
  while (i < w.size()) {
    if (w[i] == 'c') i += 1;
    else if (w[i] == 'a' && i + 1 < w.size() && w[i + 1] == 'b') i += 2;
    else break;
  }
  return i;
}
bool member(const std::string& w, bool accepts_empty) { return parsed(w) == w.size() && (accepts_empty || !w.empty()); }
bool live(const std::string& w) {
  const size_t i = parsed(w);
  return i == w.size() || (i + 1 == w.size() && w[i] == 'a');
}

std::vector<int32_t> expected_allowed(const std::string& w, bool accepts_empty, bool terminated) {
  std::vector<int32_t> out;
  if (!terminated) {
    for (int32_t t = 0; t < static_cast<int32_t>(kTexts.size()); ++t) {
      if (!kTexts[t].empty() && live(w + kTexts[t])) out.push_back(t);
    }
  }
  if (terminated || member(w, accepts_empty)) out.insert(out.end(), kEos.begin(), kEos.end());
  std::sort(out.begin(), out.end());
  return out;
}

struct Fixture {
  std::shared_ptr<RegexCore> lexer;
  std::shared_ptr<ConstraintCore> constraint;
};

Fixture make_constraint(bool accepts_empty) {
  Vocabulary v = make_vocabulary(kTexts, {"<eos>", "<x>", "<eot>"}, 2);
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex terminal = b.plus(b.alt(b.literal("ab"), b.literal("c")));
  Fixture f;
  f.lexer = make_native_core(v.trie(), nullptr, make_lexer(arena, terminal.id), kEos, 1000);
  f.constraint = std::make_shared<ConstraintCore>(f.lexer, nullptr, 0, accepts_empty, std::vector<int32_t>{0},
                                                  std::vector<int32_t>{}, 16, 64);
  return f;
}

// fill into one word more than needed, pre-set to ones: the extra word must come back cleared
std::vector<int32_t> filled(MatcherCore& m) {
  const int64_t words = m.constraint().num_words();
  std::vector<uint32_t> bits(static_cast<size_t>(words + 1), 0xFFFFFFFFu);
  m.fill(bits.data(), words + 1);
  CHECK_EQ(bits.back(), 0u);
  bits.pop_back();
  const std::vector<int32_t> ids = set_bits(bits);
  for (int32_t id : ids) CHECK(id < kVocabSize);
  return ids;
}

uint32_t next_random(uint64_t& seed, uint32_t bound) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>((seed >> 33) % bound);
}

}  // namespace

TEST(matcher_regular_constraint_shape) {
  Fixture f = make_constraint(false);
  CHECK(f.constraint->strategy() == Strategy::kRegular);
  CHECK_EQ(f.constraint->vocab_size(), kVocabSize);
  CHECK_EQ(f.constraint->num_words(), 1);
  CHECK(f.constraint->ends_output(10) && f.constraint->ends_output(12));
  CHECK(!f.constraint->ends_output(kOther));
  CHECK(f.constraint->initial() == (Configuration{0, 0, 1}));
  CHECK_THROWS(ConstraintCore(f.lexer, nullptr, kDead, false, {0}, {}, 16, 64), std::invalid_argument);
  CHECK_THROWS(ConstraintCore(f.lexer, nullptr, 5, false, {0}, {}, 16, 64), std::invalid_argument);
  CHECK_THROWS(ConstraintCore(f.lexer, nullptr, 0, false, {0, 1}, {kOther}, 16, 64), std::invalid_argument);
  CHECK_THROWS(ConstraintCore(f.lexer, nullptr, 0, false, {}, {}, 16, 64), std::invalid_argument);
  CHECK_THROWS(ConstraintCore(nullptr, nullptr, 0, false, {0}, {}, 16, 64), std::invalid_argument);
}

TEST(matcher_consume_status_table) {
  for (bool accepts_empty : {false, true}) {
    CONTEXT("accepts_empty " << accepts_empty);
    Fixture f = make_constraint(accepts_empty);
    struct Row {
      std::vector<int32_t> before;  // consumed first (all accepted)
      int32_t token;
      ConsumeStatus status;
    };
    const std::vector<Row> table = {
        {{}, -1, kOutOfRange},
        {{}, kVocabSize, kOutOfRange},
        {{}, 1000, kOutOfRange},
        {{}, 13, kRefused},          // padding
        {{}, kOther, kRefused},      // special, not EOS
        {{}, id_of(""), kRefused},   // empty: not in the trie
        {{}, id_of("d"), kRefused},
        {{}, id_of("b"), kRefused},
        {{}, id_of("bc"), kRefused},
        {{}, id_of("abc"), kAccepted},
        {{}, 10, accepts_empty ? kAccepted : kRefused},
        {{id_of("a")}, id_of("a"), kRefused},
        {{id_of("a")}, id_of("bc"), kAccepted},
        {{id_of("a")}, 10, kRefused},
        {{id_of("ab")}, 12, kAccepted},
        {{id_of("ca")}, id_of("ca"), kRefused},
        {{id_of("c"), id_of("ca")}, id_of("b"), kAccepted},
        {{id_of("c"), 10}, id_of("c"), kRefused},  // terminated
        {{id_of("c"), 10}, 12, kRefused},
        {{id_of("c"), 10}, -1, kOutOfRange},
    };
    for (const Row& row : table) {
      CONTEXT("after " << describe(row.before) << " token " << row.token);
      for (bool fill_first : {false, true}) {  // with and without the mask known
        MatcherCore m(f.constraint);
        for (int32_t t : row.before) CHECK_EQ(m.consume(t), kAccepted);
        if (fill_first) filled(m);
        const std::vector<Configuration> position = m.position();
        const size_t history = m.history_length();
        const bool terminated = m.is_terminated();
        CHECK_EQ(m.consume(row.token), row.status);
        if (row.status != kAccepted) {
          CHECK(m.position() == position);
          CHECK_EQ(m.history_length(), history);
          CHECK_EQ(m.is_terminated(), terminated);
        } else {
          CHECK_EQ(m.history_length(), history + 1);
        }
      }
    }
  }
}

TEST(matcher_random_walks_follow_the_language) {
  for (bool accepts_empty : {false, true}) {
    Fixture f = make_constraint(accepts_empty);
    uint64_t seed = accepts_empty ? 7 : 11;
    for (int walk = 0; walk < 40; ++walk) {
      CONTEXT("accepts_empty " << accepts_empty << " walk " << walk);
      MatcherCore m(f.constraint);
      std::vector<std::string> outputs{""};  // the output after each consumed token
      bool terminated = false;
      for (int step = 0; step < 25; ++step) {
        const std::string& w = outputs.back();
        CONTEXT("step " << step << " output " << describe(w) << (terminated ? " (terminated)" : ""));
        const std::vector<int32_t> expected = expected_allowed(w, accepts_empty, terminated);
        CHECK_EQ(filled(m), expected);
        CHECK_EQ(m.is_accepting(), terminated || member(w, accepts_empty));
        CHECK_EQ(m.is_terminated(), terminated);
        CHECK_EQ(m.history_length(), outputs.size() - 1 + (terminated ? 1 : 0));
        CHECK_EQ(m.num_configurations(), 1u);
        const uint32_t action = next_random(seed, 10);
        if (action < 2) {  // roll back a few tokens
          const int32_t n = static_cast<int32_t>(next_random(seed, 4));
          const int32_t available = static_cast<int32_t>(outputs.size() - 1) + (terminated ? 1 : 0);
          CHECK_EQ(m.rollback(n), std::min(n, available));
          int32_t left = n;
          if (terminated && left > 0) {
            terminated = false;
            --left;
          }
          while (left > 0 && outputs.size() > 1) {
            outputs.pop_back();
            --left;
          }
          continue;
        }
        // any id, allowed ones more often
        const int32_t token = action < 7 && !expected.empty()
                                  ? expected[next_random(seed, static_cast<uint32_t>(expected.size()))]
                                  : static_cast<int32_t>(next_random(seed, kVocabSize));
        const bool allowed = std::find(expected.begin(), expected.end(), token) != expected.end();
        const ConsumeStatus status = m.consume(token);
        CHECK_EQ(status, allowed && !terminated ? kAccepted : kRefused);
        if (status != kAccepted) continue;
        if (std::find(kEos.begin(), kEos.end(), token) != kEos.end()) terminated = true;
        else outputs.push_back(w + kTexts[token]);
      }
    }
  }
}

TEST(matcher_terminated_and_rollback) {
  Fixture f = make_constraint(false);
  MatcherCore m(f.constraint);
  CHECK_EQ(m.consume(id_of("ab")), kAccepted);
  CHECK_EQ(m.consume(id_of("ca")), kAccepted);
  const std::vector<Configuration> mid = m.position();
  CHECK_EQ(m.consume(id_of("b")), kAccepted);
  const std::vector<int32_t> before_eos = filled(m);
  CHECK_EQ(before_eos, expected_allowed("abcab", false, false));
  CHECK_EQ(m.consume(12), kAccepted);
  CHECK(m.is_terminated());
  CHECK(m.is_accepting());
  CHECK_EQ(filled(m), kEos);
  CHECK_EQ(m.history_length(), 4u);
  CHECK_EQ(m.rollback(1), 1);
  CHECK(!m.is_terminated());
  CHECK_EQ(filled(m), before_eos);
  CHECK_EQ(m.consume(12), kAccepted);
  CHECK_EQ(m.rollback(2), 2);  // EOS and "b"
  CHECK(m.position() == mid);
  CHECK_EQ(filled(m), expected_allowed("abca", false, false));
  CHECK_EQ(m.rollback(0), 0);
  CHECK_EQ(m.rollback(100), 2);
  CHECK(m.position() == std::vector<Configuration>{f.constraint->initial()});
  CHECK_EQ(m.history_length(), 0u);
  CHECK_EQ(m.rollback(1), 0);
  CHECK_EQ(filled(m), expected_allowed("", false, false));
}

TEST(matcher_accepts_empty_only_at_the_start) {
  struct Row {
    bool accepts_empty;
    std::vector<std::string> tokens;
    bool accepting;
  };
  const std::vector<Row> table = {
      {false, {}, false}, {true, {}, true},     {false, {"c"}, true},       {true, {"c"}, true},
      {true, {"a"}, false}, {true, {"ab", "a"}, false}, {true, {"ab", "c"}, true},
  };
  for (const Row& row : table) {
    CONTEXT("accepts_empty " << row.accepts_empty << " after " << describe(row.tokens));
    Fixture f = make_constraint(row.accepts_empty);
    std::string output;
    for (const std::string& t : row.tokens) output += t;
    CHECK_EQ(member(output, row.accepts_empty), row.accepting);  // (the table agrees with the oracle)
    for (bool fill_first : {false, true}) {
      MatcherCore m(f.constraint);
      for (const std::string& t : row.tokens) CHECK_EQ(m.consume(id_of(t)), kAccepted);
      if (fill_first) filled(m);
      CHECK_EQ(m.is_accepting(), row.accepting);  // before and after the mask is known
      CHECK_EQ(filled(m), expected_allowed(output, row.accepts_empty, false));
      CHECK_EQ(m.consume(10), row.accepting ? kAccepted : kRefused);
    }
  }
}

TEST(matcher_copies_are_independent) {
  Fixture f = make_constraint(true);
  MatcherCore original(f.constraint);
  CHECK_EQ(original.consume(id_of("ab")), kAccepted);
  MatcherCore copy(original);
  CHECK_EQ(copy.consume(id_of("a")), kAccepted);
  CHECK_EQ(filled(original), expected_allowed("ab", true, false));
  CHECK_EQ(filled(copy), expected_allowed("aba", true, false));
  CHECK_EQ(original.consume(10), kAccepted);
  CHECK(!copy.is_terminated());
  CHECK_EQ(copy.consume(10), kRefused);
  MatcherCore second(original);  // a copy of a terminated matcher is terminated
  CHECK(second.is_terminated());
  CHECK_EQ(second.rollback(2), 2);
  CHECK_EQ(filled(second), expected_allowed("", true, false));
  CHECK(original.is_terminated());
}

TEST(matcher_cached_paths_answer_only_from_the_cache) {
  Fixture f = make_constraint(false);
  MatcherCore m(f.constraint);
  std::vector<uint32_t> bits(1, 0xABCDEF01u);
  CHECK(!m.fill_if_cached(bits.data(), 1));  // nothing computed yet
  CHECK_EQ(bits[0], 0xABCDEF01u);            // and nothing written
  CHECK_EQ(m.consume_if_cached(id_of("c")), -1);
  CHECK_EQ(m.history_length(), 0u);
  filled(m);  // computes the start state's row
  MatcherCore other(f.constraint);
  CHECK(other.fill_if_cached(bits.data(), 1));
  CHECK_EQ(set_bits(bits), expected_allowed("", false, false));
  CHECK_EQ(other.consume_if_cached(id_of("b")), kRefused);
  CHECK_EQ(other.consume_if_cached(-3), kOutOfRange);
  CHECK_EQ(other.consume_if_cached(10), kRefused);  // EOS, not accepting
  CHECK_EQ(other.history_length(), 0u);
  CHECK_EQ(other.consume_if_cached(id_of("abc")), kAccepted);
  CHECK_EQ(m.consume(id_of("abc")), kAccepted);
  CHECK(other.position() == m.position());
  // the state after "abc" has no row yet: neither cached path may compute it
  CHECK(!other.fill_if_cached(bits.data(), 1));
  CHECK_EQ(other.consume_if_cached(id_of("c")), -1);
  CHECK(other.position() == m.position());
}

TEST(matcher_shared_constraint_across_threads) {
  for (bool accepts_empty : {false, true}) {
    CONTEXT("accepts_empty " << accepts_empty);
    Fixture f = make_constraint(accepts_empty);  // fresh: rows are computed during the walks
    constexpr int kThreads = 4;
    std::vector<int> mismatches(kThreads, 0), steps(kThreads, 0);
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
      threads.emplace_back([&, id] {
        uint64_t seed = 1000 + static_cast<uint64_t>(id);
        for (int walk = 0; walk < 30; ++walk) {
          MatcherCore m(f.constraint);
          std::string w;
          for (int step = 0; step < 12; ++step) {
            const int64_t words = f.constraint->num_words();
            std::vector<uint32_t> bits(static_cast<size_t>(words), 0u);
            m.fill(bits.data(), words);
            const std::vector<int32_t> expected = expected_allowed(w, accepts_empty, false);
            mismatches[id] += set_bits(bits) != expected;
            ++steps[id];
            std::vector<int32_t> text;
            for (int32_t t : expected) {
              if (t < static_cast<int32_t>(kTexts.size())) text.push_back(t);
            }
            if (text.empty()) break;
            const int32_t token = text[next_random(seed, static_cast<uint32_t>(text.size()))];
            mismatches[id] += m.consume(token) != kAccepted;
            w += kTexts[token];
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int id = 0; id < kThreads; ++id) {
      CONTEXT("thread " << id);
      CHECK_EQ(mismatches[id], 0);
      CHECK(steps[id] >= 30);
    }
  }
}

TEST(matcher_steps_on_the_pool_and_fills_after_consumes_elsewhere) {
  Fixture f = make_constraint(false);
  constexpr size_t kMatchers = 9;
  const int64_t words = f.constraint->num_words();
  std::vector<std::unique_ptr<MatcherCore>> matchers;
  for (size_t i = 0; i < kMatchers; ++i) matchers.push_back(std::make_unique<MatcherCore>(f.constraint));
  std::vector<std::string> outputs(kMatchers);
  std::vector<int32_t> tokens(kMatchers, -1);
  std::vector<uint32_t> rows(kMatchers * static_cast<size_t>(words));
  std::vector<int32_t> status(kMatchers);
  uint64_t seed = 99;
  for (int step = 0; step < 40; ++step) {
    CONTEXT("step " << step);
    if (step % 2 == 0) {  // a batch's step on two threads
      WorkerPool::instance().run(2, kMatchers, [&](size_t i) {
        status[i] = matchers[i]->step(tokens[i], rows.data() + i * static_cast<size_t>(words), words);
      });
    } else {  // consumed here, filled on the pool
      for (size_t i = 0; i < kMatchers; ++i) status[i] = tokens[i] < 0 ? kAccepted : matchers[i]->consume(tokens[i]);
      WorkerPool::instance().run(2, kMatchers, [&](size_t i) {
        matchers[i]->fill(rows.data() + i * static_cast<size_t>(words), words);
      });
    }
    for (size_t i = 0; i < kMatchers; ++i) {
      const int32_t t = tokens[i];
      const bool allowed = t >= 0 && t < static_cast<int32_t>(kTexts.size()) && live(outputs[i] + kTexts[t]);
      CHECK_EQ(status[i], (t < 0 || allowed) ? kAccepted : kRefused);
      if (allowed) outputs[i] += kTexts[t];
      const std::vector<uint32_t> row(rows.begin() + static_cast<std::ptrdiff_t>(i * words),
                                      rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * words));
      CHECK_EQ(set_bits(row), expected_allowed(outputs[i], false, false));
      // next: mostly a text token (allowed or not), sometimes none
      tokens[i] = next_random(seed, 5) == 0 ? -1 : static_cast<int32_t>(next_random(seed, 9));
    }
  }
}

// Drafts (matcher_draft.cpp): fill_draft's rows equal fill after each consumed prefix, stop
// after the refused token's row, and the matcher is where it was (checked by its position,
// history and mask) for random drafts from random positions.
TEST(matcher_drafts_equal_consume_fill_rollback) {
  uint64_t seed = 7;
  for (int trial = 0; trial < 300; ++trial) {
    Fixture f = make_constraint(trial % 2 == 0);
    MatcherCore m(f.constraint);
    const uint32_t before = next_random(seed, 4);
    for (uint32_t i = 0; i < before; ++i) m.consume(static_cast<int32_t>(next_random(seed, 10)));
    std::vector<int32_t> draft(next_random(seed, 6));
    for (int32_t& t : draft) t = static_cast<int32_t>(next_random(seed, kVocabSize));
    CONTEXT("trial " << trial);
    const std::vector<Configuration> here = m.position();
    const size_t history = m.history_length();
    const bool terminated = m.is_terminated();
    const std::vector<int32_t> mask = filled(m);
    // the oracle: consume, fill, ..., rollback
    MatcherCore oracle(m);
    std::vector<std::vector<int32_t>> rows = {filled(oracle)};
    int32_t accepted = 0;
    while (accepted < static_cast<int32_t>(draft.size()) && oracle.consume(draft[accepted]) == kAccepted) {
      ++accepted;
      rows.push_back(filled(oracle));
    }
    if (accepted < static_cast<int32_t>(draft.size())) CHECK(rows.size() == static_cast<size_t>(accepted) + 1);
    const int64_t words = m.constraint().num_words();
    std::vector<uint32_t> out((draft.size() + 2) * static_cast<size_t>(words), 0xA5A5A5A5u);
    std::vector<uint8_t> accepting(draft.size() + 2, 9);
    const int64_t written = m.fill_draft(draft.data(), static_cast<int64_t>(draft.size()), out.data(), words, words,
                                         accepting.data());
    CHECK_EQ(written, static_cast<int64_t>(rows.size()));
    CHECK_EQ(m.validate_draft(draft.data(), static_cast<int64_t>(draft.size())), static_cast<int64_t>(accepted));
    for (size_t r = 0; r < rows.size(); ++r) {
      CHECK_EQ(set_bits(std::vector<uint32_t>(out.begin() + static_cast<std::ptrdiff_t>(r * words),
                                              out.begin() + static_cast<std::ptrdiff_t>((r + 1) * words))),
               rows[r]);
      const bool eos = std::find(rows[r].begin(), rows[r].end(), kEos[0]) != rows[r].end();
      CHECK_EQ(accepting[r], eos ? 1 : 0);
    }
    for (size_t k = rows.size() * static_cast<size_t>(words); k < out.size(); ++k) CHECK_EQ(out[k], 0xA5A5A5A5u);
    CHECK_EQ(accepting[rows.size()], 9);
    CHECK(m.position() == here);
    CHECK_EQ(m.history_length(), history);
    CHECK_EQ(m.is_terminated(), terminated);
    CHECK_EQ(filled(m), mask);
  }
}
