// A process-wide pool of worker threads for batch work (fill_bitmasks with threads > 1).
//
// Invariants:
// - run(threads, count, job) calls job(i) exactly once for every i in [0, count), on at most
//   `threads` threads, the caller being one of them, and returns when all calls returned.
//   The first exception a call throws is rethrown by run (the other calls still run).
// - Workers are started the first time a run needs them and are never joined (the pool
//   lives until the process exits). Between runs a worker spins for about kSpinMicros before
//   it sleeps on a condition variable, and the caller spins the same way waiting for the
//   workers: a decoding loop calls run once per step, and waking a sleeping thread costs tens
//   of microseconds on a virtual machine, as much as a whole batch of cached masks.
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
    const int helpers = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), count)) - 1;
    {
      std::lock_guard<std::mutex> guard(mu_);
      while (static_cast<int>(workers_.size()) < helpers) {
        const int id = static_cast<int>(workers_.size());
        workers_.emplace_back([this, id] { work(id); });
      }
      job_ = &job;
      count_ = count;
      next_.store(0, std::memory_order_relaxed);
      wanted_.store(helpers, std::memory_order_relaxed);
      finished_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    take_items();
    if (!spin_until([this] { return finished_.load(std::memory_order_acquire) == wanted_.load(); })) {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [this] { return finished_.load(std::memory_order_acquire) == wanted_.load(); });
    }
    std::lock_guard<std::mutex> guard(mu_);
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  WorkerPool() = default;

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

  void take_items() {
    for (size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) {
      try {
        (*job_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> guard(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      if (!spin_until(changed)) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, changed);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (id >= wanted_.load(std::memory_order_relaxed)) continue;
      take_items();
      if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == wanted_.load()) {
        std::lock_guard<std::mutex> guard(mu_);
        done_.notify_all();
      }
    }
  }

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<int> wanted_{0};
  std::atomic<int> finished_{0};
  std::atomic<uint64_t> generation_{0};
  std::exception_ptr error_;
};

}  // namespace tokamata
