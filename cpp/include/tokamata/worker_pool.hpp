// A process-wide pool of worker threads for batch work (fill_bitmasks with threads > 1).
//
// Invariants:
// - run(threads, count, job) calls job(i) exactly once for every i in [0, count), on at most
//   `threads` threads, the caller being one of them, and returns when all calls returned.
//   The first exception a call throws is rethrown by run (the other calls still run).
// - The caller never waits for a worker that has not claimed an item: run returns as soon as
//   every call returned, whether or not the workers woke up in time to take any (a worker
//   that wakes late finds nothing left and goes back to waiting). It waits only for the
//   items a worker claimed and is still running.
// - Items are claimed from both ends of [0, count): the caller from the front, the workers
//   from the back, through one atomic word (a generation, the next front index and the end
//   of the back), in chunks that shrink as the round empties (guided scheduling).
//   Consecutive runs over the same batch therefore give each thread about the same
//   contiguous items, so the rows they write stay in that core's cache; and a thread writes
//   the two shared words (claims, completions) once per chunk, not once per item: on this
//   kind of virtual machine a cache line moving between cores costs ~170 ns, as much as a
//   third of a warm fill.
// - Workers are started the first time a run needs them and are never joined (the pool
//   lives until the process exits). Between runs a worker spins for about kSpinMicros before
//   it sleeps on a condition variable, and the caller spins the same way waiting for calls
//   in progress on the workers: a decoding loop calls run once per step, and waking a
//   sleeping thread costs tens of microseconds on a virtual machine, as much as a whole batch
//   of cached masks.
// - One run uses the pool at a time; a run that finds it busy (another thread's batch) does
//   its work on the calling thread alone, so callers never wait on each other.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tokamata {

class WorkerPool {
 public:
  static constexpr int64_t kSpinMicros = 200;
  // items per round: the claim word holds two 22-bit indices (a larger run takes several rounds)
  static constexpr size_t kRoundItems = (size_t{1} << 22) - 1;

  static WorkerPool& instance() {
    static WorkerPool* pool = new WorkerPool();  // never destroyed: workers may still wait
    return *pool;
  }

  void run(int threads, size_t count, const std::function<void(size_t)>& job) {
    std::unique_lock<std::mutex> exclusive(run_mu_, std::try_to_lock);
    if (threads <= 1 || count <= 1 || !exclusive.owns_lock()) {
      std::exception_ptr first;
      for (size_t i = 0; i < count; ++i) {
        try {
          job(i);
        } catch (...) {
          if (!first) first = std::current_exception();
        }
      }
      if (first) std::rethrow_exception(first);
      return;
    }
    std::exception_ptr first;
    for (size_t base = 0; base < count; base += kRoundItems) {
      const size_t n = std::min(count - base, kRoundItems);
      if (base == 0) {
        round(threads, n, job);
      } else {
        round(threads, n, [&](size_t i) { job(base + i); });
      }
      if (error_ && !first) first = error_;
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  WorkerPool() = default;

  // the claim word: generation (20 bits) | front (22) | back (22); items [front, back) are unclaimed
  static uint64_t word(uint64_t generation, uint64_t front, uint64_t back) {
    return (generation << 44) | (front << 22) | back;
  }
  static uint64_t generation_of(uint64_t w) { return w >> 44; }
  static size_t front_of(uint64_t w) { return static_cast<size_t>((w >> 22) & kRoundItems); }
  static size_t back_of(uint64_t w) { return static_cast<size_t>(w & kRoundItems); }

  void round(int threads, size_t count, const std::function<void(size_t)>& job) {
    const int helpers = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), count)) - 1;
    uint64_t generation;
    {
      std::lock_guard<std::mutex> guard(mu_);
      while (static_cast<int>(workers_.size()) < helpers) {
        const int id = static_cast<int>(workers_.size());
        workers_.emplace_back([this, id] { work(id); });
      }
      job_ = &job;
      count_ = count;
      completed_.store(0, std::memory_order_relaxed);
      wanted_.store(helpers, std::memory_order_relaxed);
      error_ = nullptr;
      generation = (generation_of(claims_.load(std::memory_order_relaxed)) + 1) & 0xfffff;
      claims_.store(word(generation, 0, count), std::memory_order_release);  // (publishes the fields above)
    }
    wake_.notify_all();  // (no system call when no worker sleeps)
    take_items(true, generation);
    auto all_done = [this] { return completed_.load(std::memory_order_acquire) == count_; };
    if (!spin_until(all_done)) {  // a worker is inside a call: wait for it
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, all_done);
    }
    std::lock_guard<std::mutex> guard(mu_);
    job_ = nullptr;
  }

  template <class Ready>
  static bool spin_until(Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0;; ++i) {
      if (ready()) return true;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::this_thread::yield();
#endif
    }
  }

  // Claims items of round `generation` (the caller from the front, a worker from the back) and
  // calls them until none is left. A claim takes a chunk of a fraction of the items left
  // (guided scheduling: 1/(2 x threads) of them, at least one), so a round of n items costs
  // each thread O(log n) writes to the shared claim and completion words, not one per item,
  // while the last claims stay single items for balance. A successful claim proves the round
  // still runs (its items have not returned), so job_ and count_ are that round's
  // when read after it. (A worker delayed across 2^20 rounds could take part in a later round
  // that wanted fewer threads: harmless.)
  void take_items(bool front, uint64_t generation) {
    for (;;) {
      uint64_t w = claims_.load(std::memory_order_acquire);
      size_t first, last;  // the chunk [first, last)
      for (;;) {
        const size_t lo = front_of(w), hi = back_of(w);
        if (lo >= hi || generation_of(w) != generation) return;
        const size_t threads = static_cast<size_t>(wanted_.load(std::memory_order_relaxed)) + 1;  // (stale: any chunk is correct)
        const size_t chunk = std::max<size_t>(1, (hi - lo) / (2 * threads));
        first = front ? lo : hi - chunk;
        last = first + chunk;
        const uint64_t next = front ? word(generation, last, hi) : word(generation, lo, first);
        if (claims_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) break;
      }
      const size_t count = count_;
      for (size_t k = 0; k < last - first; ++k) {
        const size_t item = front ? first + k : last - 1 - k;  // (the worker from the back end inwards)
        try {
          (*job_)(item);
        } catch (...) {
          std::lock_guard<std::mutex> guard(mu_);
          if (!error_) error_ = std::current_exception();
        }
      }
      if (completed_.fetch_add(last - first, std::memory_order_acq_rel) + (last - first) == count) {
        std::lock_guard<std::mutex> guard(mu_);  // (the caller may sleep on done_)
        done_.notify_all();
      }
    }
  }

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      auto changed = [&] { return generation_of(claims_.load(std::memory_order_acquire)) != seen; };
      if (!spin_until(changed)) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, changed);
      }
      seen = generation_of(claims_.load(std::memory_order_acquire));
      // (wanted_ is this round's or a later one's: then this round's items are all gone)
      if (id >= wanted_.load(std::memory_order_relaxed)) continue;
      take_items(false, seen);
    }
  }

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t count_ = 0;
  std::exception_ptr error_;
  std::atomic<int> wanted_{0};
  alignas(64) std::atomic<uint64_t> claims_{0};     // written once per claimed chunk
  alignas(64) std::atomic<size_t> completed_{0};   // written once per finished chunk
};

}  // namespace tokamata
