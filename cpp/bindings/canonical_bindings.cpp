// Python bindings of the native canonical filter (canonical_filter.hpp): plain arrays in,
// the GIL released around everything that scales with the vocabulary or searches.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "tokamata/canonical_filter.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace tokamata {

namespace {

using U8 = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32 = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Bitmask = nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void check_offsets(const I64& offsets, size_t count, size_t bytes, const char* what) {
  if (offsets.shape(0) != count + 1) throw nb::value_error((std::string(what) + ": offsets need count + 1 entries").c_str());
  const int64_t* o = offsets.data();
  for (size_t i = 0; i < count; ++i) {
    if (o[i] < 0 || o[i] > o[i + 1]) throw nb::value_error((std::string(what) + ": offsets must be non-decreasing").c_str());
  }
  if (static_cast<size_t>(o[count]) != bytes) throw nb::value_error((std::string(what) + ": offsets must end at len(bytes)").c_str());
}

std::shared_ptr<CanonicalTokenizer> make_tokenizer(int32_t family, bool ignore_merges, U8 token_bytes, I64 token_offsets,
                                                   U8 has_bytes, U8 piece_bytes, I64 piece_offsets, I32 piece_ids,
                                                   I32 merges, I32 byte_symbols, I32 classes, U8 added_bytes,
                                                   I64 added_offsets, I32 added_ids, I32 eos) {
  const size_t n = has_bytes.shape(0);
  check_offsets(token_offsets, n, token_bytes.shape(0), "token_bytes");
  check_offsets(piece_offsets, piece_ids.shape(0), piece_bytes.shape(0), "pieces");
  check_offsets(added_offsets, added_ids.shape(0), added_bytes.shape(0), "added");
  if (merges.shape(0) % 3 != 0 || classes.shape(0) % 3 != 0) throw nb::value_error("merges and classes: triples");
  if (byte_symbols.shape(0) != 256) throw nb::value_error("byte_symbols: 256 entries");
  std::vector<uint8_t> tb(token_bytes.data(), token_bytes.data() + token_bytes.shape(0));
  std::vector<int64_t> to(token_offsets.data(), token_offsets.data() + token_offsets.shape(0));
  std::vector<uint8_t> hb(has_bytes.data(), has_bytes.data() + n);
  std::vector<int32_t> e(eos.data(), eos.data() + eos.shape(0));
  nb::gil_scoped_release release;
  try {
    return std::make_shared<CanonicalTokenizer>(
        family, ignore_merges, std::move(tb), std::move(to), std::move(hb), piece_bytes.data(), piece_offsets.data(),
        piece_ids.data(), static_cast<int64_t>(piece_ids.shape(0)), merges.data(), static_cast<int64_t>(merges.shape(0) / 3),
        byte_symbols.data(), classes.data(), static_cast<int64_t>(classes.shape(0) / 3), added_bytes.data(),
        added_offsets.data(), added_ids.data(), static_cast<int64_t>(added_ids.shape(0)), std::move(e));
  } catch (const std::invalid_argument& ex) {
    nb::gil_scoped_acquire acquire;
    throw nb::value_error(ex.what());
  }
}

uint32_t* row_of(const CanonicalFilter&, const MatcherCore& m, Bitmask& bitmask, int64_t index, int64_t& width) {
  if (index < 0 || index >= static_cast<int64_t>(bitmask.shape(0))) throw nb::index_error("bitmask row index out of range");
  width = static_cast<int64_t>(bitmask.shape(1));
  if (width < m.constraint().num_words()) throw nb::value_error("bitmask too narrow");
  return reinterpret_cast<uint32_t*>(bitmask.data()) + index * width;
}

}  // namespace

void bind_canonical(nb::module_& m) {
  using Release = nb::call_guard<nb::gil_scoped_release>;
  nb::class_<CanonicalTokenizer>(m, "CanonicalTokenizer")
      .def(nb::new_(&make_tokenizer), "family"_a, "ignore_merges"_a, "token_bytes"_a, "token_offsets"_a, "has_bytes"_a,
           "piece_bytes"_a, "piece_offsets"_a, "piece_ids"_a, "merges"_a, "byte_symbols"_a, "classes"_a,
           "added_bytes"_a, "added_offsets"_a, "added_ids"_a, "eos"_a)
      .def("region", [](const CanonicalTokenizer& t, nb::bytes text)
               -> std::optional<std::pair<std::vector<std::tuple<int32_t, int32_t, int32_t>>, int32_t>> {
        std::vector<PretokenSpan> spans;
        int32_t open = 0;
        if (!t.region(reinterpret_cast<const uint8_t*>(text.c_str()), static_cast<int32_t>(text.size()), spans, open))
          return std::nullopt;
        std::vector<std::tuple<int32_t, int32_t, int32_t>> out;
        for (const PretokenSpan& s : spans) out.emplace_back(s.start, s.end, s.added);
        return std::make_pair(out, open);
      }, "text"_a)
      .def("encode", [](const CanonicalTokenizer& t, nb::bytes text) -> std::optional<std::vector<int32_t>> {
        std::vector<int32_t> out;
        if (!t.encode(reinterpret_cast<const uint8_t*>(text.c_str()), static_cast<int32_t>(text.size()), out))
          return std::nullopt;
        return out;
      }, "text"_a)
      .def("bigram", &CanonicalTokenizer::bigram, "a"_a, "b"_a, Release())
      .def("bigram_traces", [](const CanonicalTokenizer& t, int32_t a, int32_t b) {
        if (a < 0 || b < 0 || a >= t.num_tokens() || b >= t.num_tokens()) return false;
        return t.bigram_traces(a, t.cached_trace(a), b, t.cached_trace(b));
      }, "a"_a, "b"_a, Release())
      .def("bigram_cached", [](const CanonicalTokenizer& t, int32_t a, int32_t b) {
        if (a < 0 || b < 0 || a >= t.num_tokens() || b >= t.num_tokens()) return false;
        return t.bigram_cached(a, b);
      }, "a"_a, "b"_a, Release())
      .def("char_group", [](const CanonicalTokenizer& t, nb::bytes ch) {
        return t.char_group(reinterpret_cast<const uint8_t*>(ch.c_str()), static_cast<int32_t>(ch.size()));
      }, "ch"_a)
      .def("solo_alive", [](const CanonicalTokenizer& t, int32_t token) {
        return t.has_bytes(token) && t.solo_alive(token);
      }, "token"_a)
      .def("solo_complete", [](const CanonicalTokenizer& t, int32_t token) {
        return t.has_bytes(token) && t.solo_complete(token);
      }, "token"_a)
      .def("solo_closes", [](const CanonicalTokenizer& t, int32_t token, int32_t byte) {
        if (byte < 0 || byte > 127) throw nb::value_error("an ASCII character code");
        return t.has_bytes(token) && t.solo_closes(token, t.char_key(static_cast<uint8_t>(byte)));
      }, "token"_a, "byte"_a);

  nb::class_<CanonicalFilter>(m, "CanonicalFilter")
      .def(nb::init<std::shared_ptr<const CanonicalTokenizer>, std::shared_ptr<ConstraintCore>, int64_t>(),
           "tokenizer"_a, "constraint"_a, "max_search"_a)
      .def("fill", [](CanonicalFilter& f, MatcherCore& mc, int32_t state, Bitmask bitmask, int64_t index) {
        int64_t width = 0;
        uint32_t* row = row_of(f, mc, bitmask, index, width);
        nb::gil_scoped_release release;
        f.fill(mc, state, row, width);
      }, "matcher"_a, "state"_a, "bitmask"_a, "index"_a)
      .def("allowed", [](CanonicalFilter& f, MatcherCore& mc, int32_t state) {
        std::vector<int32_t> out;
        {
          nb::gil_scoped_release release;
          std::vector<uint32_t> row(static_cast<size_t>(mc.constraint().num_words()));
          f.fill(mc, state, row.data(), static_cast<int64_t>(row.size()));
          for (size_t w = 0; w < row.size(); ++w) {
            for (uint32_t bits = row[w]; bits; bits &= bits - 1)
              out.push_back(static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits))));
          }
        }
        return out;
      }, "matcher"_a, "state"_a)
      .def("accept", &CanonicalFilter::accept, "matcher"_a, "state"_a, "token"_a, Release())
      .def("complete", &CanonicalFilter::complete, "state"_a, Release())
      .def_prop_ro("num_states", &CanonicalFilter::num_states);
}

}  // namespace tokamata
