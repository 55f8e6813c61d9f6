// WorkerPool (worker_pool.hpp): the process-wide pool behind fill_bitmasks(threads > 1).
//
// Invariants tested:
// - run(threads, count, job) calls job(i) exactly once for every i in [0, count), on at most
//   `threads` distinct threads, and returns only when every call returned (threads 1..4, counts
//   0..1000, repeated runs reusing the workers).
// - one call per run on the caller alone when threads <= 1 or count <= 1.
// - the first exception is rethrown (with threads = 1, the lowest failing index's); the other
//   calls still run, on the inline path too.
// - a run that finds the pool busy (a nested run inside a job, or another thread's run) does
//   its work on the calling thread and completes without waiting.
// - on two threads the caller's calls are a prefix of [0, count) and the worker's the rest
//   (each thread keeps contiguous items, so consecutive runs give it the same rows; either
//   part may be empty).
// - many short runs in a row (workers waking late, finding nothing or a later run) still call
//   every index exactly once per run.
// Every wait is bounded by a watchdog, so a deadlock fails the process instead of hanging it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runner.hpp"
#include "tokamata/worker_pool.hpp"

using namespace tokamata;

namespace {

// Runs `body` on another thread; a body still running after `seconds` is a deadlock: the
// process exits with status 1 (a hung thread cannot be recovered).
template <class Body>
void with_watchdog(double seconds, Body body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    std::printf("    watchdog: still running after %.0f s (deadlock?)\n1 tests, 1 failed\n", seconds);
    std::fflush(stdout);
    std::_Exit(1);
  }
  done.get();
}

struct Calls {
  explicit Calls(size_t count) : times(count) {
    for (auto& t : times) t.store(0);
  }
  std::vector<std::atomic<int>> times;
  std::mutex mu;
  std::set<std::thread::id> threads;
  void record(size_t i) {
    times[i].fetch_add(1);
    std::lock_guard<std::mutex> guard(mu);
    threads.insert(std::this_thread::get_id());
  }
};

}  // namespace

TEST(pool_calls_every_index_exactly_once) {
  with_watchdog(60, [] {
    for (int threads = 1; threads <= 4; ++threads) {
      for (size_t count : {0, 1, 2, 3, 7, 64, 1000}) {
        for (int repeat = 0; repeat < 3; ++repeat) {
          CONTEXT("threads " << threads << " count " << count << " repeat " << repeat);
          Calls calls(count);
          WorkerPool::instance().run(threads, count, [&](size_t i) { calls.record(i); });
          int wrong = 0;
          for (size_t i = 0; i < count; ++i) wrong += calls.times[i].load() != 1;
          CHECK_EQ(wrong, 0);
          CHECK(calls.threads.size() <= static_cast<size_t>(threads));
          if ((threads == 1 || count == 1) && count > 0) {  // the caller alone
            CHECK_EQ(calls.threads.size(), 1u);
            CHECK_EQ(calls.threads.count(std::this_thread::get_id()), 1u);
          }
        }
      }
    }
  });
}

namespace {

// run(threads, 50 jobs) where jobs 3 and 30 throw: (message rethrown, how many indices were not
// called exactly once).
std::pair<std::string, int> run_failing_jobs(int threads) {
  const size_t count = 50;
  Calls calls(count);
  std::string caught = "(nothing rethrown)";
  try {
    WorkerPool::instance().run(threads, count, [&](size_t i) {
      calls.record(i);
      if (i == 3 || i == 30) throw std::runtime_error("job " + std::to_string(i));
    });
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  int wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += calls.times[i].load() != 1;
  return {caught, wrong};
}

}  // namespace

TEST(pool_rethrows_the_first_exception_and_runs_the_rest) {
  with_watchdog(60, [] {
    for (int threads = 2; threads <= 4; ++threads) {
      CONTEXT("threads " << threads);
      const auto [caught, wrong] = run_failing_jobs(threads);
      CHECK(caught == "job 3" || caught == "job 30");
      CHECK_EQ(wrong, 0);
      std::atomic<size_t> total{0};  // and the pool still works afterwards
      WorkerPool::instance().run(threads, 100, [&](size_t i) { total.fetch_add(i); });
      CHECK_EQ(total.load(), 4950u);
    }
    CHECK_EQ(run_failing_jobs(1).first, std::string("job 3"));  // in index order on one thread
  });
}

// The inline path (threads <= 1, count <= 1, or a busy pool) keeps running the other calls after
// an exception, like the pooled path, and rethrows the first.
TEST(pool_inline_run_still_runs_the_other_calls) {
  with_watchdog(60, [] {
    const auto [caught, wrong] = run_failing_jobs(1);
    CHECK_EQ(caught, std::string("job 3"));
    CHECK_EQ(wrong, 0);  // jobs 4..49 ran too
  });
}

TEST(pool_nested_run_completes_on_the_calling_thread) {
  with_watchdog(60, [] {
    const size_t outer = 8, inner = 10;
    std::vector<std::atomic<int>> calls(outer * inner);
    for (auto& c : calls) c.store(0);
    std::atomic<int> foreign_inner_calls{0};
    WorkerPool::instance().run(4, outer, [&](size_t i) {
      const std::thread::id me = std::this_thread::get_id();
      WorkerPool::instance().run(4, inner, [&, i, me](size_t j) {
        calls[i * inner + j].fetch_add(1);
        if (std::this_thread::get_id() != me) foreign_inner_calls.fetch_add(1);
      });
    });
    int wrong = 0;
    for (auto& c : calls) wrong += c.load() != 1;
    CHECK_EQ(wrong, 0);
    CHECK_EQ(foreign_inner_calls.load(), 0);
  });
}

TEST(pool_busy_run_from_another_thread_runs_on_its_caller) {
  with_watchdog(60, [] {
    std::mutex mu;
    std::condition_variable changed;
    bool holding = false, release = false;
    // thread A: a run whose jobs wait until released, so the pool stays busy
    std::thread a([&] {
      WorkerPool::instance().run(2, 2, [&](size_t) {
        std::unique_lock<std::mutex> lock(mu);
        holding = true;
        changed.notify_all();
        changed.wait(lock, [&] { return release; });
      });
    });
    {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return holding; });
    }
    // thread B (this one): finds the pool busy, runs alone, returns while A still waits
    std::set<std::thread::id> threads;
    std::atomic<int> calls{0};
    WorkerPool::instance().run(4, 20, [&](size_t) {
      calls.fetch_add(1);
      std::lock_guard<std::mutex> guard(mu);
      threads.insert(std::this_thread::get_id());
    });
    CHECK_EQ(calls.load(), 20);
    CHECK_EQ(threads.size(), 1u);
    CHECK_EQ(threads.count(std::this_thread::get_id()), 1u);
    {
      std::lock_guard<std::mutex> guard(mu);
      CHECK(!release);  // A was still inside its run the whole time
      release = true;
    }
    changed.notify_all();
    a.join();
  });
}

TEST(pool_two_threads_split_the_items_into_a_prefix_and_a_suffix) {
  with_watchdog(60, [] {
    for (size_t count : {2, 3, 64, 500}) {
      for (int repeat = 0; repeat < 20; ++repeat) {
        CONTEXT("count " << count << " repeat " << repeat);
        std::vector<std::thread::id> by(count);
        WorkerPool::instance().run(2, count, [&](size_t i) {
          by[i] = std::this_thread::get_id();
          if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));  // (let the worker in)
        });
        const std::thread::id caller = std::this_thread::get_id();
        size_t prefix = 0;
        while (prefix < count && by[prefix] == caller) ++prefix;
        size_t wrong = 0;
        for (size_t i = prefix; i < count; ++i) wrong += by[i] == caller || by[i] != by[count - 1];
        CHECK_EQ(wrong, 0u);
      }
    }
  });
}

TEST(pool_many_short_runs_call_every_index_once) {
  with_watchdog(120, [] {
    uint32_t seed = 12345;
    auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
    for (int run = 0; run < 20000; ++run) {
      const int threads = 2 + static_cast<int>(next() >> 30);  // 2..5
      const size_t count = 2 + (next() >> 28);                  // 2..17
      std::vector<std::atomic<int>> times(count);
      for (auto& t : times) t.store(0);
      WorkerPool::instance().run(threads, count, [&](size_t i) { times[i].fetch_add(1); });
      int wrong = 0;
      for (auto& t : times) wrong += t.load() != 1;
      if (wrong) {
        CONTEXT("run " << run << " threads " << threads << " count " << count);
        CHECK_EQ(wrong, 0);
        return;
      }
      if (run % 1000 == 999) std::this_thread::sleep_for(std::chrono::microseconds(300));  // (workers fall asleep)
    }
  });
}
