// A process-wide pool of worker threads for batch work (fill_bitmasks with threads > 1).
//
// Invariants:
// - run(threads, count, job) calls job(i) exactly once for every i in [0, count), on at most
//   `threads` threads, the caller being one of them, and returns when all calls returned.
//   The first exception a call throws is rethrown by run (the other calls still run).
// - Workers are started the first time a run needs them and then wait for the next run;
//   they are never joined (the pool lives until the process exits).
// - One run uses the pool at a time; a run that finds it busy (another thread's batch) does
//   its work on the calling thread alone, so callers never wait on each other.
#pragma once
#include <atomic>
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
  static WorkerPool& instance() {
    static WorkerPool* pool = new WorkerPool();  // never destroyed: workers may still wait
    return *pool;
  }

  void run(int threads, size_t count, const std::function<void(size_t)>& job) {
    std::unique_lock<std::mutex> exclusive(run_mu_, std::try_to_lock);
    if (threads <= 1 || count <= 1 || !exclusive.owns_lock()) {
      for (size_t i = 0; i < count; ++i) job(i);
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
      next_.store(0);
      wanted_ = helpers;
      finished_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    take_items();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return finished_ == wanted_; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  WorkerPool() = default;

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
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen && id < wanted_; });
      seen = generation_;
      lock.unlock();
      take_items();
      lock.lock();
      if (++finished_ == wanted_) done_.notify_all();
    }
  }

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  int wanted_ = 0;
  int finished_ = 0;
  uint64_t generation_ = 0;
  std::exception_ptr error_;
};

}  // namespace tokamata
