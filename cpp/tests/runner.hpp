// A tiny self-contained test runner for the C++ core (no gtest, no Python).
//
// Invariants:
// - TEST(name) registers a named function in one process-wide registry, in the order the
//   translation units' static initializers run; names are unique across files (each file
//   prefixes its area: trie_, arena_, dfa_, rules_, earley_, matcher_, pool_).
// - CHECK / CHECK_EQ / CHECK_THROWS record a failure with file:line, the expression, the
//   values (CHECK_EQ) and the enclosing CONTEXT lines, and continue with the next statement;
//   a test fails when it recorded a failure or let an exception escape.
// - KNOWN_BUG_TEST(name, reason) is a test that shows a bug of the core not fixed yet: it runs
//   like any other, its failures are printed and expected (XFAIL, not counted as failed), and
//   once it passes it counts as failed (XPASS) until it is made a plain TEST.
// - test_main.cpp runs the tests whose names contain argv[1] (all without it), prints one line
//   per test and the summary "N tests, M failed", and exits 1 when anything failed or when no
//   test matched the filter.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tokamata_test {

using TestFunction = void (*)();

struct TestCase {
  std::string name;
  TestFunction run;
  const char* file;
  int line;
  const char* known_bug;  // null for a plain test
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

struct Registrar {
  Registrar(const char* name, TestFunction run, const char* file, int line, const char* known_bug = nullptr) {
    registry().push_back(TestCase{name, run, file, line, known_bug});
  }
};

// ------------------------------------------------------------------ failures and context

struct RunState {
  int failures = 0;                   // in the running test
  std::vector<std::string> contexts;  // CONTEXT lines, innermost last
};

inline RunState& run_state() {
  static RunState state;
  return state;
}

constexpr int kPrintedFailuresPerTest = 25;

inline void report_failure(const char* file, int line, const std::string& what) {
  RunState& state = run_state();
  ++state.failures;
  if (state.failures > kPrintedFailuresPerTest) {
    if (state.failures == kPrintedFailuresPerTest + 1) std::printf("    (further failures of this test not shown)\n");
    return;
  }
  std::printf("    %s:%d: %s\n", file, line, what.c_str());
  for (const std::string& context : state.contexts) std::printf("      while: %s\n", context.c_str());
  std::fflush(stdout);
}

// A line of context printed under every failure recorded while it is alive.
class Context {
 public:
  explicit Context(std::string line) { run_state().contexts.push_back(std::move(line)); }
  ~Context() { run_state().contexts.pop_back(); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

// ------------------------------------------------------------------ printing values

template <class T, class = void>
struct Streamable : std::false_type {};
template <class T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

inline std::string describe(const std::string& text);
inline std::string describe(const char* text);
template <class T>
std::string describe(const std::vector<T>& values);
template <class A, class B>
std::string describe(const std::pair<A, B>& pair);
template <class T>
std::string describe(const T& value);

inline std::string describe(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out + "\"";
}

inline std::string describe(const char* text) { return describe(std::string(text)); }

template <class T>
std::string describe(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    if (i == 64) {
      out += "... " + std::to_string(values.size() - 64) + " more";
      break;
    }
    out += describe(values[i]);
  }
  return out + "]";
}

template <class A, class B>
std::string describe(const std::pair<A, B>& pair) {
  return "(" + describe(pair.first) + ", " + describe(pair.second) + ")";
}

template <class T>
std::string describe(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<long long>(value));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    return std::to_string(static_cast<int>(value));
  } else if constexpr (Streamable<T>::value) {
    std::ostringstream out;
    out << value;
    return out.str();
  } else {
    return "<unprintable>";
  }
}

// Equality that compares integers of mixed signedness and width by value.
template <class A, class B>
bool equal_values(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                !std::is_same_v<B, bool>) {
    return static_cast<__int128>(a) == static_cast<__int128>(b);
  } else {
    return a == b;
  }
}

}  // namespace tokamata_test

#define TT_CONCAT_INNER(a, b) a##b
#define TT_CONCAT(a, b) TT_CONCAT_INNER(a, b)

#define TEST(name)                                                                                   \
  static void name();                                                                                \
  static const ::tokamata_test::Registrar TT_CONCAT(name, _registrar)(#name, &name, __FILE__, __LINE__); \
  static void name()

#define KNOWN_BUG_TEST(name, reason)                                                                      \
  static void name();                                                                                     \
  static const ::tokamata_test::Registrar TT_CONCAT(name, _registrar)(#name, &name, __FILE__, __LINE__, reason); \
  static void name()

// CONTEXT(a << b << ...): a context line for the failures of the enclosing scope.
#define CONTEXT(stream_expression)                                                        \
  const ::tokamata_test::Context TT_CONCAT(tt_context_, __LINE__)(                        \
      static_cast<const std::ostringstream&>(std::ostringstream() << stream_expression).str())

#define FAIL(message) ::tokamata_test::report_failure(__FILE__, __LINE__, std::string(message))

#define CHECK(condition)                                                                  \
  do {                                                                                    \
    if (!(condition)) ::tokamata_test::report_failure(__FILE__, __LINE__, "CHECK(" #condition ")"); \
  } while (0)

#define CHECK_EQ(actual, expected)                                                                     \
  do {                                                                                                 \
    const auto& tt_actual = (actual);                                                                  \
    const auto& tt_expected = (expected);                                                              \
    if (!::tokamata_test::equal_values(tt_actual, tt_expected)) {                                      \
      ::tokamata_test::report_failure(__FILE__, __LINE__,                                              \
                                      "CHECK_EQ(" #actual ", " #expected "): " +                       \
                                          ::tokamata_test::describe(tt_actual) + " != " +              \
                                          ::tokamata_test::describe(tt_expected));                     \
    }                                                                                                  \
  } while (0)

#define CHECK_THROWS(statement, ExceptionType)                                                         \
  do {                                                                                                 \
    try {                                                                                              \
      statement;                                                                                       \
      ::tokamata_test::report_failure(__FILE__, __LINE__, "CHECK_THROWS(" #statement ", " #ExceptionType "): nothing thrown"); \
    } catch (const ExceptionType&) {                                                                   \
    } catch (const std::exception& tt_other) {                                                         \
      ::tokamata_test::report_failure(__FILE__, __LINE__, std::string("CHECK_THROWS(" #statement ", " #ExceptionType "): threw another: ") + tt_other.what()); \
    }                                                                                                  \
  } while (0)
