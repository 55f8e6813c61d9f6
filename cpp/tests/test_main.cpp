// The runner's main: runs the registered tests (runner.hpp) whose names contain argv[1].
//
// Invariants: every selected test runs once, in registration order, even after a failure; an
// exception escaping a test is a failure of that test; a KNOWN_BUG_TEST is expected to fail
// (XFAIL) and counts as failed when it passes (XPASS); the last line is "N tests, M failed";
// the exit code is 1 when a test failed or the filter matched nothing, else 0.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "runner.hpp"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const std::string filter = argc > 1 ? argv[1] : "";
  if (filter == "--list") {
    for (const auto& test : tokamata_test::registry()) std::printf("%s\n", test.name.c_str());
    return 0;
  }
  int ran = 0, failed = 0, known_bugs = 0;
  for (const auto& test : tokamata_test::registry()) {
    if (test.name.find(filter) == std::string::npos) continue;
    ++ran;
    std::printf("[ RUN  ] %s\n", test.name.c_str());
    std::fflush(stdout);
    tokamata_test::RunState& state = tokamata_test::run_state();
    state.failures = 0;
    state.contexts.clear();
    const auto started = Clock::now();
    try {
      test.run();
    } catch (const std::exception& e) {
      tokamata_test::report_failure(test.file, test.line, std::string("uncaught exception: ") + e.what());
    } catch (...) {
      tokamata_test::report_failure(test.file, test.line, "uncaught exception of an unknown type");
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    if (test.known_bug && state.failures) {
      ++known_bugs;
      std::printf("[XFAIL ] %s (a known core bug: %s)\n", test.name.c_str(), test.known_bug);
    } else if (test.known_bug) {
      ++failed;
      std::printf("[XPASS ] %s (the known bug is fixed: make it a plain TEST)\n", test.name.c_str());
    } else if (state.failures) {
      ++failed;
      std::printf("[ FAIL ] %s (%d failed checks, %.1f ms)\n", test.name.c_str(), state.failures, ms);
    } else {
      std::printf("[  OK  ] %s (%.1f ms)\n", test.name.c_str(), ms);
    }
    std::fflush(stdout);
  }
  if (known_bugs) std::printf("%d known core bugs (expected failures, listed as XFAIL above)\n", known_bugs);
  if (ran == 0) std::printf("no test name contains \"%s\"\n", filter.c_str());
  std::printf("%d tests, %d failed\n", ran, failed);
  return (failed || ran == 0) ? 1 : 0;
}
