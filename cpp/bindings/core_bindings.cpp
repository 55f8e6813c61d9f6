// nanobind module tokamata._core: plain data in and out (flat int32/uint8 arrays, 32-bit
// ids, caller-owned bitmask buffers). Work that scales with the vocabulary or runs per token
// runs without the GIL; lexer DFAs expand natively through DerivativeDfa (automata/native.py),
// and their start states are made natively too (lexer_starts.hpp): no walk calls into Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <cstring>
#include <string>

#include "tokamata/derivative_dfa.hpp"
#include "tokamata/earley.hpp"
#include "tokamata/expr_arena.hpp"
#include "tokamata/lexer_starts.hpp"
#include "tokamata/grammar_rules.hpp"
#include "tokamata/grammar_walk.hpp"
#include "tokamata/logits_mask.hpp"
#include "tokamata/matcher_core.hpp"
#include "tokamata/token_row.hpp"
#include "tokamata/token_slices.hpp"
#include "tokamata/token_trie.hpp"
#include "tokamata/worker_pool.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace tokamata;

namespace tokamata {
void bind_canonical(nb::module_& m);  // canonical_bindings.cpp
}

namespace {

using U8Array = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32Array = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Bitmask = nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

std::shared_ptr<TokenTrie> make_trie(U8Array bytes, I64Array offsets, U8Array in_trie, int32_t vocab_size) {
  const int64_t n = static_cast<int64_t>(in_trie.shape(0));
  if (static_cast<int64_t>(offsets.shape(0)) != n + 1) throw nb::value_error("offsets must have num_tokens + 1 entries");
  const int64_t* off = offsets.data();
  for (int64_t i = 0; i < n; ++i) {
    if (off[i] > off[i + 1] || off[i] < 0) throw nb::value_error("offsets must be non-decreasing");
  }
  if (off[n] != static_cast<int64_t>(bytes.shape(0))) throw nb::value_error("offsets must end at len(bytes)");
  if (vocab_size < n) throw nb::value_error("vocab_size smaller than the number of tokens");
  nb::gil_scoped_release release;
  return std::make_shared<TokenTrie>(bytes.data(), off, in_trie.data(), static_cast<int32_t>(n), vocab_size);
}


std::shared_ptr<TokenSlices> make_slices(std::shared_ptr<TokenTrie> trie, I32Array automaton, I32Array bounds) {
  if (automaton.shape(0) == 0 || automaton.shape(0) % 256 != 0) throw nb::value_error("automaton: 256 entries per state");
  nb::gil_scoped_release release;
  try {
    return std::make_shared<TokenSlices>(trie, automaton.data(), static_cast<int32_t>(automaton.shape(0) / 256),
                                         bounds.data(), static_cast<int32_t>(bounds.shape(0)));
  } catch (const std::invalid_argument& e) {
    nb::gil_scoped_acquire acquire;
    throw nb::value_error(e.what());
  }
}

// A RegexCore over a native lexer DFA: expansions, keys and text depths run in C++ (no
// callback into Python).
std::shared_ptr<RegexCore> make_native_core(std::shared_ptr<TokenTrie> trie, std::shared_ptr<SharedRowCache> shared,
                                            std::shared_ptr<DerivativeDfa> lexer, I32Array eos_ids,
                                            int32_t max_states, std::shared_ptr<TokenSlices> slices) {
  if (slices && &slices->full() != trie.get()) throw nb::value_error("slices were built over another trie");
  std::vector<int32_t> eos(eos_ids.data(), eos_ids.data() + eos_ids.shape(0));
  nb::gil_scoped_release release;
  return regex_core_over(std::move(trie), std::move(shared), std::move(lexer), std::move(eos), max_states,
                         std::move(slices));
}

// Runs `f` under the arena's mutex (callers have dropped the GIL; see expr_arena.hpp).
template <class F>
auto locked(ExprArena& arena, F f) {
  std::lock_guard<std::recursive_mutex> lock(arena.mutex());
  return f();
}

// Sets the arena's emptiness-search budget for one call (under its mutex), then restores it.
class BudgetScope {
 public:
  BudgetScope(ExprArena& arena, int64_t budget) : arena_(arena), saved_(arena.search_budget()) {
    arena_.set_search_budget(budget);
  }
  ~BudgetScope() { arena_.set_search_budget(saved_); }
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  ExprArena& arena_;
  int64_t saved_;
};

void fill_one(MatcherCore& m, Bitmask bitmask, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(bitmask.shape(0))) throw nb::index_error("bitmask row index out of range");
  if (static_cast<int64_t>(bitmask.shape(1)) < m.constraint().num_words()) throw nb::value_error("bitmask too narrow");
  uint32_t* row = reinterpret_cast<uint32_t*>(bitmask.data()) + index * bitmask.shape(1);
  const int64_t width = static_cast<int64_t>(bitmask.shape(1));
  if (m.fill_if_cached(row, width)) return;  // a bounded copy: not worth dropping the GIL
  nb::gil_scoped_release release;
  m.fill(row, width);
}

// fill_one under a token budget (matcher_budget.cpp): always computes without the GIL
void fill_one_budget(MatcherCore& m, Bitmask bitmask, int64_t index, int32_t budget, int64_t max_states) {
  if (index < 0 || index >= static_cast<int64_t>(bitmask.shape(0))) throw nb::index_error("bitmask row index out of range");
  if (static_cast<int64_t>(bitmask.shape(1)) < m.constraint().num_words()) throw nb::value_error("bitmask too narrow");
  if (budget < 1) throw nb::value_error("a budget is at least 1 token");
  uint32_t* row = reinterpret_cast<uint32_t*>(bitmask.data()) + index * bitmask.shape(1);
  const int64_t width = static_cast<int64_t>(bitmask.shape(1));
  nb::gil_scoped_release release;
  m.fill_budget(row, width, budget, max_states);
}

using Words = nb::ndarray<uint32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Flags = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A draft's rows [start, start + n + 1) of the bitmask (the rows fill_draft may write).
uint32_t* draft_rows(const MatcherCore& m, Bitmask& bitmask, int64_t start, int64_t n) {
  if (start < 0 || start + n + 1 > static_cast<int64_t>(bitmask.shape(0)))
    throw nb::index_error("the draft's rows do not fit in the bitmask");
  if (static_cast<int64_t>(bitmask.shape(1)) < m.constraint().num_words()) throw nb::value_error("bitmask too narrow");
  return reinterpret_cast<uint32_t*>(bitmask.data()) + start * static_cast<int64_t>(bitmask.shape(1));
}

// Draft ids must be in [0, vocab_size) (ValueError before anything is consumed or written).
void check_ids(const MatcherCore& m, const std::vector<int32_t>& tokens) {
  const int32_t vocab = m.constraint().vocab_size();
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) throw nb::value_error("draft token id out of range");
  }
}

// Drafts of many matchers (CSR: matcher i's draft is tokens[offsets[i], offsets[i + 1]), its
// rows start at starts[i]); one work item per distinct matcher, the GIL released for the
// batch. Returns the rows written per matcher.
// The work items of a batch: one per distinct matcher (a matcher listed twice is one item, so
// one thread uses it), the matchers of one constraint next to each other, else in the order of
// their first appearance in the batch. `order` lists the batch's indices item by item; item g
// is order[groups[g]] .. order[groups[g + 1] - 1]. The pool gives each thread contiguous items,
// so a constraint's matchers (which share its cache lock and, in lockstep, the same rows and
// their reference counts) mostly run on one core, and a batch listed in a stable order keeps
// a matcher, its masks and its row on the same core from step to step.
void batch_items(const std::vector<MatcherCore*>& matchers, std::vector<size_t>& order, std::vector<size_t>& groups) {
  const size_t count = matchers.size();
  std::vector<size_t> by_matcher(count);
  for (size_t i = 0; i < count; ++i) by_matcher[i] = i;
  std::stable_sort(by_matcher.begin(), by_matcher.end(), [&](size_t a, size_t b) { return matchers[a] < matchers[b]; });
  std::vector<std::pair<size_t, size_t>> spans;  // (start, end) in by_matcher; start is the first appearance
  for (size_t k = 0; k < count; ++k) {
    if (k == 0 || matchers[by_matcher[k]] != matchers[by_matcher[k - 1]]) spans.emplace_back(k, k);
    spans.back().second = k + 1;
  }
  std::sort(spans.begin(), spans.end(), [&](const auto& a, const auto& b) {
    const size_t i = by_matcher[a.first], j = by_matcher[b.first];
    const ConstraintCore* ci = &matchers[i]->constraint();
    const ConstraintCore* cj = &matchers[j]->constraint();
    return ci != cj ? std::less<const ConstraintCore*>()(ci, cj) : i < j;
  });
  order.clear();
  groups.clear();
  for (const auto& [start, end] : spans) {
    groups.push_back(order.size());
    order.insert(order.end(), by_matcher.begin() + static_cast<std::ptrdiff_t>(start), by_matcher.begin() + static_cast<std::ptrdiff_t>(end));
  }
  groups.push_back(order.size());
}

std::vector<int64_t> fill_drafts(std::vector<MatcherCore*> matchers, I32Array tokens, I64Array offsets, Bitmask bitmask,
                                 I32Array starts, int threads, std::optional<Flags> accepting) {
  const size_t count = matchers.size();
  if (offsets.shape(0) != count + 1 || starts.shape(0) != count) throw nb::value_error("one draft per matcher");
  const int64_t* off = offsets.data();
  if (off[0] != 0 || off[count] != static_cast<int64_t>(tokens.shape(0))) throw nb::value_error("offsets must span the tokens");
  const int64_t width = static_cast<int64_t>(bitmask.shape(1));
  const int64_t rows = static_cast<int64_t>(bitmask.shape(0));
  if (accepting && static_cast<int64_t>(accepting->shape(0)) < rows) throw nb::value_error("accepting: one entry per bitmask row");
  std::vector<std::pair<int64_t, int64_t>> spans(count);  // rows each draft may write
  for (size_t i = 0; i < count; ++i) {
    if (!matchers[i]) throw nb::value_error("None is not a matcher");
    if (off[i] > off[i + 1]) throw nb::value_error("offsets must be non-decreasing");
    if (width < matchers[i]->constraint().num_words()) throw nb::value_error("bitmask too narrow");
    const int64_t start = starts.data()[i], n = off[i + 1] - off[i];
    if (start < 0 || start + n + 1 > rows) throw nb::index_error("the draft's rows do not fit in the bitmask");
    spans[i] = {start, start + n + 1};
  }
  std::vector<std::pair<int64_t, int64_t>> sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first < sorted[i - 1].second) throw nb::value_error("the drafts' rows overlap");
  }
  std::vector<size_t> order, groups;
  batch_items(matchers, order, groups);
  std::vector<int64_t> written(count, 0);
  uint32_t* base = reinterpret_cast<uint32_t*>(bitmask.data());
  uint8_t* flags = accepting ? accepting->data() : nullptr;
  const int32_t* data = tokens.data();
  nb::gil_scoped_release release;
  WorkerPool::instance().run(threads, groups.size() - 1, [&](size_t g) {
    for (size_t k = groups[g]; k < groups[g + 1]; ++k) {
      const size_t i = order[k];
      const int64_t start = spans[i].first;
      written[i] = matchers[i]->fill_draft(data + off[i], off[i + 1] - off[i], base + start * width, width, width,
                                           flags ? flags + start : nullptr);
    }
  });
  return written;
}

// logits[r, j] = -inf where bit j of mask row r is clear (logits_mask.hpp): float32, float64,
// float16 and bfloat16 rows with contiguous columns, the GIL released.
using Logits = nb::ndarray<nb::ndim<2>, nb::device::cpu>;
using MaskRows = nb::ndarray<const int32_t, nb::ndim<2>, nb::device::cpu>;

void apply_mask(Logits logits, MaskRows mask) {
  if (logits.shape(0) != mask.shape(0)) throw nb::value_error("one bitmask row per logits row");
  const int64_t col_stride = logits.shape(1) > 1 ? logits.stride(1) : 1;
  if (col_stride < 1) throw nb::value_error("logits columns must have a positive stride");
  if (mask.shape(1) > 1 && mask.stride(1) != 1) throw nb::value_error("bitmask words must be contiguous");
  const int64_t rows = static_cast<int64_t>(logits.shape(0)), cols = static_cast<int64_t>(logits.shape(1));
  const int64_t stride = logits.stride(0), words = static_cast<int64_t>(mask.shape(1)), mask_stride = mask.stride(0);
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(mask.data());
  const nb::dlpack::dtype type = logits.dtype();
  const bool half = type.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float) && type.bits == 16;
  const bool bfloat = type.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat) && type.bits == 16;
  void* data = logits.data();
  if (type == nb::dtype<float>()) {
    nb::gil_scoped_release release;
    mask_logits(static_cast<uint32_t*>(data), rows, cols, stride, col_stride, bits, words, mask_stride, kFloatNegInf);
  } else if (type == nb::dtype<double>()) {
    nb::gil_scoped_release release;
    mask_logits(static_cast<uint64_t*>(data), rows, cols, stride, col_stride, bits, words, mask_stride, kDoubleNegInf);
  } else if ((half || bfloat) && type.lanes == 1) {
    nb::gil_scoped_release release;
    mask_logits(static_cast<uint16_t*>(data), rows, cols, stride, col_stride, bits, words, mask_stride,
                half ? kHalfNegInf : kBfloat16NegInf);
  } else {
    throw nb::type_error("logits must be float32, float64, float16 or bfloat16");
  }
}

// (std::invalid_argument from the constructors below reaches Python as ValueError)
std::shared_ptr<GrammarRules> make_grammar_rules(I32Array lhs, I32Array rhs_offsets, I32Array rhs,
                                                int32_t num_nonterminals, int32_t num_terminals) {
  return std::make_shared<GrammarRules>(std::vector<int32_t>(lhs.data(), lhs.data() + lhs.shape(0)),
                                        std::vector<int32_t>(rhs_offsets.data(), rhs_offsets.data() + rhs_offsets.shape(0)),
                                        std::vector<int32_t>(rhs.data(), rhs.data() + rhs.shape(0)),
                                        num_nonterminals, num_terminals);
}

nb::bytes as_bytes(const std::vector<uint8_t>& flags) {
  return nb::bytes(reinterpret_cast<const char*>(flags.data()), flags.size());
}

std::shared_ptr<EarleyCore> make_earley(const GrammarRules& rules, int32_t start, int64_t max_items, int64_t max_sets) {
  return std::make_shared<EarleyCore>(earley_tables(rules, start), max_items, max_sets);
}

// terminals: the arena id of each terminal tagged with its index (0, NOTHING: a special
// token); start states and the terminals ending at a lexer state come from the native lexer
// DFA (lexer_starts.hpp): no callback into Python.
std::shared_ptr<GrammarCore> make_grammar_core(std::shared_ptr<RegexCore> lexer, std::shared_ptr<SharedEventCache> shared,
                                               std::shared_ptr<EarleyCore> parser, U8Array ignored, I32Array terminals,
                                               std::shared_ptr<DerivativeDfa> lexer_dfa, int64_t max_mask_work) {
  if (max_mask_work < 1) throw nb::value_error("max_mask_work must be positive");
  std::vector<uint8_t> ignore(ignored.data(), ignored.data() + ignored.shape(0));
  GrammarCore::StartFn start_fn;
  try {
    start_fn = native_starts(lexer_dfa, lexer.get(), parser,
                             std::vector<int32_t>(terminals.data(), terminals.data() + terminals.shape(0)), ignore);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error(e.what());
  }
  GrammarCore::EndsFn ends_fn = [lexer_dfa](int32_t state, std::vector<int32_t>& out) { out = lexer_dfa->ends(state); };
  return std::make_shared<GrammarCore>(std::move(lexer), std::move(shared), std::move(parser), std::move(ignore),
                                       std::move(start_fn), std::move(ends_fn), max_mask_work);
}

std::shared_ptr<ConstraintCore> make_constraint_core(std::shared_ptr<RegexCore> lexer, std::shared_ptr<GrammarCore> grammar,
                                                     int32_t initial_lexer, bool accepts_empty, I32Array special_offsets,
                                                     I32Array special_tokens, int64_t max_configurations,
                                                     size_t mask_cache_size) {
  std::vector<int32_t> offsets(special_offsets.data(), special_offsets.data() + special_offsets.shape(0));
  std::vector<int32_t> tokens(special_tokens.data(), special_tokens.data() + special_tokens.shape(0));
  try {
    return std::make_shared<ConstraintCore>(std::move(lexer), std::move(grammar), initial_lexer, accepts_empty, std::move(offsets),
                                            std::move(tokens), max_configurations, mask_cache_size);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error(e.what());
  }
}

std::vector<int32_t> set_bits(const uint32_t* bits, int64_t words) {
  std::vector<int32_t> out;
  for (int64_t w = 0; w < words; ++w) {
    uint32_t x = bits[w];
    while (x) {
      out.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(x)));
      x &= x - 1;
    }
  }
  return out;
}

void check_words(const Words& out, const RegexCore& core) {
  if (static_cast<int64_t>(out.shape(0)) != core.num_words()) throw nb::value_error("row buffer has the wrong length");
}

void check_state(const RegexCore& core, int32_t state) {
  if (state < 0 || state >= core.num_states()) throw nb::value_error("lexer state out of range");
}

void check_parser(GrammarCore& g, int32_t parser) {
  if (parser < 0 || parser >= g.parser().num_handles()) throw nb::value_error("parser state out of range");
}

// the checks of a walk over one configuration into a caller's row: its bits
uint32_t* checked_walk(GrammarCore& g, int32_t parser, int32_t state, Words& out) {
  check_words(out, g.lexer());
  check_state(g.lexer(), state);
  check_parser(g, parser);
  return out.data();
}

// The rows of a batch fill: checks every matcher and row index (before anything is written),
// then runs fill(i, row, width) for every i without the GIL, one work item per distinct matcher
// (a matcher is used by one thread at a time; batch_items). fill_bitmasks and fill_bitmasks_budget share it.
template <class Fill>
void fill_rows(const std::vector<MatcherCore*>& matchers, Bitmask& bitmask, const I32Array& indices, int threads,
               Fill fill) {
  if (indices.shape(0) != matchers.size()) throw nb::value_error("one row index per matcher");
  const int64_t width = static_cast<int64_t>(bitmask.shape(1));
  for (size_t i = 0; i < matchers.size(); ++i) {
    if (indices.data()[i] < 0 || indices.data()[i] >= static_cast<int64_t>(bitmask.shape(0)))
      throw nb::index_error("bitmask row index out of range");
    if (!matchers[i]) throw nb::value_error("None is not a matcher");
    if (width < matchers[i]->constraint().num_words()) throw nb::value_error("bitmask too narrow");
  }
  uint32_t* base = reinterpret_cast<uint32_t*>(bitmask.data());
  const int32_t* rows = indices.data();
  std::vector<size_t> order, groups;
  batch_items(matchers, order, groups);
  nb::gil_scoped_release release;
  WorkerPool::instance().run(threads, groups.size() - 1, [&](size_t g) {
    for (size_t k = groups[g]; k < groups[g + 1]; ++k) {
      const size_t i = order[k];
      fill(i, base + rows[i] * width, width);
    }
  });
}

// A batch's decoding step (tokamata.consume_tokens): per matcher, consume tokens[i] (-1: none)
// then, with a bitmask, fill row rows[i] (MatcherCore::step), one work item per matcher in
// batch_items' order (the order fill_bitmasks uses, so the pool gives a stable batch's matchers
// to the same threads in both calls). Everything is checked before anything is consumed: ids
// in [-1, vocab_size), one row per matcher, no matcher listed twice. status[i] gets the
// ConsumeStatus, or kStepFailed when the matcher's step threw; the error of the first such
// matcher (by index) is rethrown once every other matcher's step has run.
constexpr uint8_t kStepFailed = 3;

void consume_tokens(const std::vector<MatcherCore*>& matchers, const I32Array& tokens, std::optional<Bitmask>& bitmask,
                    const I32Array& indices, Flags& status, int threads) {
  const size_t count = matchers.size();
  if (tokens.shape(0) != count) throw nb::value_error("one token per matcher");
  if (status.shape(0) < count) throw nb::value_error("one status entry per matcher");
  if (bitmask && indices.shape(0) != count) throw nb::value_error("one row index per matcher");
  const int64_t width = bitmask ? static_cast<int64_t>(bitmask->shape(1)) : 0;
  for (size_t i = 0; i < count; ++i) {
    if (!matchers[i]) throw nb::value_error("None is not a matcher");
    const int32_t t = tokens.data()[i];
    if (t < -1 || t >= matchers[i]->constraint().vocab_size()) throw nb::value_error("token id out of range");
    if (!bitmask) continue;
    if (indices.data()[i] < 0 || indices.data()[i] >= static_cast<int64_t>(bitmask->shape(0)))
      throw nb::index_error("bitmask row index out of range");
    if (width < matchers[i]->constraint().num_words()) throw nb::value_error("bitmask too narrow");
  }
  std::vector<size_t> order, groups;
  batch_items(matchers, order, groups);
  if (groups.size() != count + 1) throw nb::value_error("a matcher is listed twice");
  uint32_t* base = bitmask ? reinterpret_cast<uint32_t*>(bitmask->data()) : nullptr;
  const int32_t* rows = indices.data();
  const int32_t* ids = tokens.data();
  uint8_t* out = status.data();
  std::mutex error_mu;
  size_t error_index = count;
  std::exception_ptr error;
  {
    nb::gil_scoped_release release;
    WorkerPool::instance().run(threads, count, [&](size_t g) {
      const size_t i = order[groups[g]];
      try {
        out[i] = static_cast<uint8_t>(matchers[i]->step(ids[i], base ? base + rows[i] * width : nullptr, width));
      } catch (...) {
        out[i] = kStepFailed;
        std::lock_guard<std::mutex> guard(error_mu);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
      }
    });
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "tokamata's C++ core: token trie, lazy DFA rows, Earley sets, bitmask fill";
  // Caches (vocabularies, compiled constraints) may legitimately outlive this module at
  // interpreter exit; nanobind would report them as leaks.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const LimitError& e) {  // the one place a C++ limit becomes tokamata.LimitExceeded
      nb::object error = nb::module_::import_("tokamata.errors").attr("LimitExceeded");
      auto number = [](double x) -> nb::object {
        if (x == static_cast<double>(static_cast<int64_t>(x))) return nb::int_(static_cast<int64_t>(x));
        return nb::float_(x);
      };
      nb::object instance = error(e.name, number(e.value), number(e.bound));
      PyErr_SetObject(error.ptr(), instance.ptr());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    }
  });

  nb::class_<TokenTrie>(m, "TokenTrie")
      .def(nb::new_(&make_trie), "token_bytes"_a, "offsets"_a, "in_trie"_a, "vocab_size"_a)
      .def_prop_ro("num_nodes", [](const TokenTrie& t) { return t.nodes().size(); })
      .def_prop_ro("vocab_size", &TokenTrie::vocab_size)
      .def_prop_ro("max_depth", &TokenTrie::max_depth)
      .def("arrays", [](const TokenTrie& t) {
        // (bytes, token_begin, token_count, subtree_size, num_parents, token_ids) for tests
        const auto& nodes = t.nodes();
        std::vector<int32_t> byte, begin, count, subtree, parents;
        for (const auto& n : nodes) {
          byte.push_back(n.byte); begin.push_back(n.token_begin); count.push_back(n.token_count);
          subtree.push_back(static_cast<int32_t>(n.subtree_size)); parents.push_back(n.num_parents);
        }
        return nb::make_tuple(byte, begin, count, subtree, parents, t.token_ids());
      })
      .def("has_longer_token", [](const TokenTrie& t, nb::bytes prefix) {
        // some token begins with `prefix` and is longer (token healing)
        const int64_t node = t.find(reinterpret_cast<const uint8_t*>(prefix.c_str()), static_cast<int64_t>(prefix.size()));
        return node >= 0 && t.nodes()[static_cast<size_t>(node)].subtree_size > 1;
      }, "prefix"_a);

  nb::class_<TokenSlices>(m, "TokenSlices")
      .def(nb::new_(&make_slices), "trie"_a, "automaton"_a, "bounds"_a)
      .def("sizes", [](const TokenSlices& s) {
        // [(tokens in the slice, longest token, trie nodes)] per slice, then the rest's
        std::vector<std::tuple<int32_t, int32_t, size_t>> out;
        int32_t before = 0;
        for (const TokenSlice& slice : s.slices()) {
          out.emplace_back(slice.through->num_allowed - before, slice.max_length, slice.trie->nodes().size());
          before = slice.through->num_allowed;
        }
        int32_t rest = 0;
        for (const TrieNode& node : s.rest().trie->nodes()) rest += node.token_count;
        out.emplace_back(rest, s.rest().trie->max_depth(), s.rest().trie->nodes().size());
        return out;
      });

  nb::class_<SharedRowCache>(m, "SharedRowCache")
      .def(nb::new_([](size_t max_rows) { return std::make_shared<SharedRowCache>(max_rows); }), "max_rows"_a)
      .def_prop_ro("size", &SharedRowCache::size)
      .def_prop_ro("evictions", &SharedRowCache::evictions);

  nb::class_<RegexCore>(m, "RegexCore")
      .def_prop_ro("num_states", &RegexCore::num_states)
      .def_prop_ro("num_cached_rows", &RegexCore::num_cached_rows);

  m.def("native_regex_core", &make_native_core, "trie"_a, "shared_rows"_a.none(), "lexer"_a, "eos_ids"_a,
        "max_states"_a, "slices"_a.none() = nb::none());

  // The native derivative engine (automata/native.py is its client). Node ids are int32.
  // Every call drops the GIL before taking the arena's mutex (a lexer expansion may hold the
  // mutex for long; nothing under it takes the GIL).
  using Release = nb::call_guard<nb::gil_scoped_release>;
  nb::class_<ExprArena>(m, "ExprArena")
      .def(nb::new_([]() { return std::make_shared<ExprArena>(); }))
      .def("import_nodes", [](ExprArena& a, I32Array records) {
        std::vector<int32_t> ids;
        {
          nb::gil_scoped_release release;
          std::lock_guard<std::recursive_mutex> lock(a.mutex());
          try {
            ids = a.import_nodes(records.data(), records.shape(0));
          } catch (const std::invalid_argument& e) {
            nb::gil_scoped_acquire acquire;
            throw nb::value_error(e.what());
          }
        }
        return ids;
      }, "records"_a)
      .def("set_search_budget", [](ExprArena& a, int64_t budget) {
        return locked(a, [&] { a.set_search_budget(budget); });
      }, "budget"_a, Release())
      // The smart constructors of boolean.py decide emptiness here: the node of the
      // intersection / difference (0: NOTHING), searched within `budget` product states.
      .def("intersection", [](ExprArena& a, I32Array members, int64_t budget) {
        return locked(a, [&] {
          for (size_t i = 0; i < members.shape(0); ++i) a.check(members.data()[i]);
          BudgetScope scope(a, budget);
          return a.intersection(members.data(), members.shape(0));
        });
      }, "members"_a, "budget"_a, Release())
      .def("difference", [](ExprArena& a, int32_t first, int32_t second, int64_t budget) {
        return locked(a, [&] {
          BudgetScope scope(a, budget);
          return a.difference(a.check(first), a.check(second));
        });
      }, "first"_a, "second"_a, "budget"_a, Release())
      .def("derivative", [](ExprArena& a, int32_t node, int32_t byte) {
        return locked(a, [&] { return a.derivative(node, byte); });
      }, "node"_a, "byte"_a, Release())
      .def("nullable", [](ExprArena& a, int32_t node) {
        return locked(a, [&] { return a.nullable(node); });
      }, "node"_a, Release())
      .def("untagged", [](ExprArena& a, int32_t node) {
        return locked(a, [&] { return a.untagged(a.check(node)); });
      }, "node"_a, Release())
      .def("text_depth", [](ExprArena& a, int32_t node) {
        return locked(a, [&] { return a.text_depth(node); });
      }, "node"_a, Release())
      .def_prop_ro("size", [](ExprArena& a) {
        nb::gil_scoped_release release;
        return locked(a, [&] { return a.size(); });
      })
      .def_prop_ro("footprint", [](ExprArena& a) {
        nb::gil_scoped_release release;
        return locked(a, [&] { return a.footprint(); });
      })
      .def_prop_ro("memory_bytes", [](ExprArena& a) {
        nb::gil_scoped_release release;
        return locked(a, [&] { return a.memory_bytes(); });
      });

  nb::class_<DerivativeDfa>(m, "DerivativeDfa")
      .def(nb::new_([](std::shared_ptr<ExprArena> arena, I32Array class_starts, int64_t key_base, int32_t max_states,
                       double max_seconds) {
        if (class_starts.shape(0) == 0 || class_starts.shape(0) > 256) throw nb::value_error("1 to 256 class starts");
        try {
          return std::make_shared<DerivativeDfa>(std::move(arena), class_starts.data(),
                                                 static_cast<int32_t>(class_starts.shape(0)), key_base, max_states,
                                                 max_seconds);
        } catch (const std::invalid_argument& e) {
          throw nb::value_error(e.what());
        }
      }), "arena"_a, "class_starts"_a, "key_base"_a, "max_states"_a, "max_seconds"_a)
      .def("intern_state", &DerivativeDfa::intern_state, "node"_a, Release())
      .def("start", [](DerivativeDfa& d, I32Array nodes) { return d.start(nodes.data(), nodes.shape(0)); },
           "nodes"_a, Release())
      .def("step", &DerivativeDfa::step, "state"_a, "byte"_a, Release())
      .def("ends", &DerivativeDfa::ends, "state"_a, Release())
      .def("key", &DerivativeDfa::key, "state"_a, Release())
      .def("text_depth", &DerivativeDfa::text_depth, "state"_a, Release())
      .def("accepting", &DerivativeDfa::accepting, "state"_a, Release())
      .def("accepting_from", [](DerivativeDfa& d, int32_t first) {
        std::vector<uint8_t> flags;
        {
          nb::gil_scoped_release release;
          flags = d.accepting_from(first);
        }
        return nb::bytes(reinterpret_cast<const char*>(flags.data()), flags.size());
      }, "first"_a)
      .def_prop_ro("num_states", [](DerivativeDfa& d) {
        nb::gil_scoped_release release;
        return d.num_states();
      });

  nb::class_<SharedEventCache>(m, "SharedEventCache")
      .def(nb::new_([](size_t max_lists) { return std::make_shared<SharedEventCache>(max_lists); }), "max_lists"_a)
      .def_prop_ro("size", &SharedEventCache::size)
      .def_prop_ro("evictions", &SharedEventCache::evictions);

  nb::class_<GrammarRules>(m, "GrammarRules")
      .def(nb::new_(&make_grammar_rules), "lhs"_a, "rhs_offsets"_a, "rhs"_a, "num_nonterminals"_a, "num_terminals"_a)
      .def_prop_ro("num_rules", &GrammarRules::num_rules)
      .def("productive", [](const GrammarRules& g) { return as_bytes(g.productive()); })
      .def("nullable", [](const GrammarRules& g) { return as_bytes(g.nullable()); })
      .def("reachable", [](const GrammarRules& g, int32_t start, nb::bytes productive) {
        const auto* p = reinterpret_cast<const uint8_t*>(productive.c_str());
        return as_bytes(g.reachable(start, std::vector<uint8_t>(p, p + productive.size())));
      }, "start"_a, "productive"_a);

  nb::class_<EarleyCore>(m, "EarleyCore")
      .def(nb::new_(&make_earley), "rules"_a, "start"_a, "max_items"_a, "max_sets"_a)
      .def("scan", &EarleyCore::scan, "handle"_a, "terminal"_a)
      .def("accepting", &EarleyCore::accepting, "handle"_a)
      .def("allowed_id", &EarleyCore::allowed_id, "handle"_a)
      .def("allowed", &EarleyCore::allowed, "handle"_a)
      .def("allowed_by_id", &EarleyCore::allowed_by_id, "id"_a)
      .def_prop_ro("num_sets", &EarleyCore::num_sets)
      .def_prop_ro("num_handles", &EarleyCore::num_handles)
      .def_prop_ro("num_built", &EarleyCore::num_built);

  nb::class_<GrammarCore>(m, "GrammarCore")
      .def(nb::new_(&make_grammar_core), "lexer"_a, "shared_events"_a.none(), "parser"_a, "ignored"_a,
           "terminals"_a, "lexer_dfa"_a, "max_mask_work"_a = INT64_MAX)
      .def("inside_row", [](GrammarCore& g, int32_t state, Words out) {
        RegexCore& core = g.lexer();
        check_words(out, core);
        check_state(core, state);
        const TokenRow* row = core.cached_row(state);
        if (!row) {  // the events walk computes the row on the way
          nb::gil_scoped_release release;
          g.events(state);
          row = core.compute_row(state);
        }
        row->copy_to(out.data(), out.shape(0));
        return row->num_allowed;
      }, "state"_a, "out"_a.noconvert())
      .def("crossing", [](GrammarCore& g, int32_t parser, int32_t state, Words out) {
        uint32_t* bits = checked_walk(g, parser, state, out);
        nb::gil_scoped_release release;
        return g.crossing(parser, state, bits);
      }, "parser"_a, "state"_a, "out"_a.noconvert())
      .def("plain_walk", [](GrammarCore& g, int32_t parser, int32_t state, Words out) {
        uint32_t* bits = checked_walk(g, parser, state, out);
        nb::gil_scoped_release release;
        return g.plain_walk({Config{parser, state}}, bits);
      }, "parser"_a, "state"_a, "out"_a.noconvert())
      .def("start_of", [](GrammarCore& g, int32_t parser) {
        check_parser(g, parser);
        nb::gil_scoped_release release;
        std::lock_guard<std::mutex> guard(g.lexer().compute_mutex());
        return g.start_of(parser);
      }, "parser"_a)
      .def("num_events", [](GrammarCore& g, int32_t state) {
        check_state(g.lexer(), state);
        nb::gil_scoped_release release;
        return g.events(state).size();
      }, "state"_a)
      .def("register_states", [](GrammarCore& g, int32_t known, U8Array accepting, I64Array keys) {
        if (keys.shape(0) != accepting.shape(0)) throw nb::value_error("one key per state");
        nb::gil_scoped_release release;
        g.lexer().register_states(known, accepting.data(), keys.data(), static_cast<int32_t>(accepting.shape(0)));
      }, "known"_a, "accepting"_a, "keys"_a)
      .def_prop_ro("num_states", [](GrammarCore& g) { return g.lexer().num_states(); })
      .def_prop_ro("num_event_lists", &GrammarCore::num_event_lists)
      .def_prop_ro("walk_steps", &GrammarCore::walk_steps)
      .def_prop_ro("dense_walks", &GrammarCore::dense_walks)
      .def_prop_ro("plain_walks", &GrammarCore::plain_walks)
      .def_prop_ro("scratch_fallbacks", &GrammarCore::scratch_fallbacks)
      .def_static("set_plain_walk_scratch_cap", [](int64_t bytes) {
        if (bytes < 0) throw nb::value_error("the scratch cap is a byte count >= 0");
        const size_t before = GrammarCore::plain_walk_scratch_cap();
        GrammarCore::set_plain_walk_scratch_cap(static_cast<size_t>(bytes));
        return before;
      }, "bytes"_a);

  nb::class_<ConstraintCore>(m, "ConstraintCore")
      .def(nb::new_(&make_constraint_core), "lexer"_a, "grammar"_a.none(), "initial_lexer"_a, "accepts_empty"_a, "special_offsets"_a,
           "special_tokens"_a, "max_configurations"_a, "mask_cache_size"_a)
      .def_prop_ro("strategy", [](const ConstraintCore& c) { return static_cast<int32_t>(c.strategy()); })
      .def_prop_ro("num_cached_masks", &ConstraintCore::num_cached_masks)
      .def_prop_ro("num_distinct_masks", &ConstraintCore::num_distinct_masks)
      .def("sweep", &ConstraintCore::sweep, Release())
      .def("set_sweep_threshold", &ConstraintCore::set_sweep_threshold, "live_states"_a)
      .def_prop_ro("num_sweeps", &ConstraintCore::num_sweeps)
      .def_prop_ro("num_matchers", &ConstraintCore::num_matchers)
      .def_prop_ro("num_lexer_states", [](const ConstraintCore& c) { return c.lexer().num_states(); })
      .def_prop_ro("num_cached_rows", [](const ConstraintCore& c) { return c.lexer().num_cached_rows(); })
      .def_prop_ro("row_bytes", &ConstraintCore::row_bytes)
      .def_prop_ro("table_bytes", [](const ConstraintCore& c) { return c.lexer().table_bytes(); });

  nb::class_<MatcherCore>(m, "MatcherCore")
      .def("__init__", [](MatcherCore* self, std::shared_ptr<ConstraintCore> constraint, nb::bytes prefix) {
        const uint8_t* data = reinterpret_cast<const uint8_t*>(prefix.c_str());
        new (self) MatcherCore(std::move(constraint), std::vector<uint8_t>(data, data + prefix.size()));
      }, "constraint"_a, "prefix"_a = nb::bytes(""))
      .def("fill_bitmask", &fill_one, "bitmask"_a.noconvert(), "index"_a)
      .def("fill_bitmask_budget", &fill_one_budget, "bitmask"_a.noconvert(), "index"_a, "budget"_a, "max_states"_a)
      .def("budget_needed", [](MatcherCore& m, int64_t max_states) {
        nb::gil_scoped_release release;
        return m.budget_needed(max_states);
      }, "max_states"_a)
      .def("consume", [](MatcherCore& m, int32_t token) {
        const int32_t quick = m.consume_if_cached(token);
        if (quick >= 0) {
          if (quick == kAccepted && m.constraint().sweep_due()) {
            nb::gil_scoped_release release;
            m.shared_constraint()->sweep_if_due();
          }
          return quick;
        }
        nb::gil_scoped_release release;
        return static_cast<int32_t>(m.consume(token));
      }, "token"_a)
      .def("consume_many", [](MatcherCore& m, I32Array tokens) {
        // tokens in order until the first one refused; returns (accepted count, status of the first refusal or 0)
        const int32_t* data = tokens.data();
        const size_t n = tokens.shape(0);
        nb::gil_scoped_release release;
        size_t count = 0;
        int32_t status = kAccepted;
        for (; count < n; ++count) {
          status = m.consume(data[count]);
          if (status != kAccepted) break;
        }
        return std::make_pair(count, status);
      }, "tokens"_a)
      .def("rollback", &MatcherCore::rollback, "n"_a, Release())
      .def("is_accepting", &MatcherCore::is_accepting, Release())
      .def("is_terminated", &MatcherCore::is_terminated)
      .def_prop_ro("num_sweeps", [](const MatcherCore& m) { return m.constraint().num_sweeps(); })
      .def_prop_ro("history_length", &MatcherCore::history_length)
      .def_prop_ro("num_configurations", &MatcherCore::num_configurations)
      .def("position", [](const MatcherCore& m) {
        std::vector<std::tuple<int32_t, int32_t, bool>> out;
        for (const Configuration& c : m.position()) out.emplace_back(c.parser, c.lexer, c.fresh != 0);
        return out;
      })
      .def("copy", [](const MatcherCore& m) { return MatcherCore(m); })
      .def("forced_tokens", [](MatcherCore& m, int64_t max_tokens) {
        std::vector<int32_t> out;
        {
          nb::gil_scoped_release release;
          out = m.forced_tokens(max_tokens);
        }
        return out;
      }, "max_tokens"_a)
      .def("forced_bytes", [](MatcherCore& m, int64_t max_bytes) {
        std::vector<uint8_t> out;
        {
          nb::gil_scoped_release release;
          out = m.forced_bytes(max_bytes);
        }
        return nb::bytes(reinterpret_cast<const char*>(out.data()), out.size());
      }, "max_bytes"_a)
      .def("fill_draft", [](MatcherCore& m, const std::vector<int32_t>& tokens, Bitmask bitmask, int64_t start) {
        check_ids(m, tokens);
        const int64_t n = static_cast<int64_t>(tokens.size());
        uint32_t* rows = draft_rows(m, bitmask, start, n);
        const int64_t width = static_cast<int64_t>(bitmask.shape(1));
        nb::gil_scoped_release release;
        return m.fill_draft(tokens.data(), n, rows, width, width, nullptr);
      }, "tokens"_a, "bitmask"_a.noconvert(), "start"_a)
      .def("validate_draft", [](MatcherCore& m, const std::vector<int32_t>& tokens) {
        check_ids(m, tokens);
        nb::gil_scoped_release release;
        return m.validate_draft(tokens.data(), static_cast<int64_t>(tokens.size()));
      }, "tokens"_a)
      .def("allowed_tokens", [](MatcherCore& m) {
        const int64_t words = m.constraint().num_words();
        std::vector<uint32_t> bits(static_cast<size_t>(words));
        {
          nb::gil_scoped_release release;
          m.fill(bits.data(), words);
        }
        return set_bits(bits.data(), words);
      });

  m.def("fill_bitmasks", [](std::vector<MatcherCore*> matchers, Bitmask bitmask, I32Array indices, int threads) {
    fill_rows(matchers, bitmask, indices, threads,
              [&](size_t i, uint32_t* row, int64_t width) { matchers[i]->fill(row, width); });
  }, "matchers"_a, "bitmask"_a.noconvert(), "indices"_a, "threads"_a = 1);

  m.def("consume_tokens", [](std::vector<MatcherCore*> matchers, I32Array tokens, std::optional<Bitmask> bitmask,
                             I32Array indices, Flags status, int threads) {
    consume_tokens(matchers, tokens, bitmask, indices, status, threads);
  }, "matchers"_a, "tokens"_a, "bitmask"_a.noconvert().none(), "indices"_a, "status"_a.noconvert(), "threads"_a = 1);

  m.def("fill_bitmasks_draft", &fill_drafts, "matchers"_a, "tokens"_a, "offsets"_a, "bitmask"_a.noconvert(), "starts"_a,
        "threads"_a = 1, "accepting"_a.noconvert() = nb::none());
  m.def("apply_bitmask", &apply_mask, "logits"_a.noconvert(), "bitmask"_a.noconvert());
  // fill_bitmasks with a token budget per matcher (>= 1 each)
  m.def("fill_bitmasks_budget", [](std::vector<MatcherCore*> matchers, Bitmask bitmask, I32Array indices, I32Array budgets,
                                   int64_t max_states, int threads) {
    if (budgets.shape(0) != matchers.size()) throw nb::value_error("one budget per matcher");
    const int32_t* budget = budgets.data();
    for (size_t i = 0; i < matchers.size(); ++i) {
      if (budget[i] < 1) throw nb::value_error("a budget is at least 1 token");
    }
    fill_rows(matchers, bitmask, indices, threads, [&](size_t i, uint32_t* row, int64_t width) {
      matchers[i]->fill_budget(row, width, budget[i], max_states);
    });
  }, "matchers"_a, "bitmask"_a.noconvert(), "indices"_a, "budgets"_a, "max_states"_a, "threads"_a = 1);

  bind_canonical(m);
}
