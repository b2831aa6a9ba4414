#pragma once
// The scratch of a forward pass, lent per pass instead of owned per context
// (docs/memory.md §scratch): a pass takes one, runs, gives it back. So the live contexts of one
// engine thread hold one scratch between them, grown to the largest pass, which is what the plan's
// workspace term counts; a scratch per context held N of them (a 512-token prefill chunk's
// activations each). A second scratch is made only while two passes run at once (two threads);
// none is freed before the pool. Thread-safe; a scratch is one pass's alone while it is lent.
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ds4::model {

template <class S>
class ScratchPool {
 public:
  // What take() uses when no scratch is free; it may throw (take() then throws it).
  explicit ScratchPool(std::function<std::unique_ptr<S>()> make) : make_(std::move(make)) {}

  // One scratch, the caller's until the Lease is destroyed; returned to the pool then.
  class Lease {
   public:
    Lease(ScratchPool& pool, std::unique_ptr<S> s) : pool_(&pool), s_(std::move(s)) {}
    Lease(Lease&& o) noexcept : pool_(o.pool_), s_(std::move(o.s_)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (s_) pool_->give_back(std::move(s_));
    }
    S& operator*() const { return *s_; }
    S* operator->() const { return s_.get(); }

   private:
    ScratchPool* pool_;
    std::unique_ptr<S> s_;
  };

  Lease take() {
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<S> s = std::move(free_.back());
        free_.pop_back();
        return Lease(*this, std::move(s));
      }
    }
    std::unique_ptr<S> s = make_();
    std::lock_guard lock(mu_);
    made_++;
    return Lease(*this, std::move(s));
  }

  // Scratches made so far (lent or free).
  size_t made() const {
    std::lock_guard lock(mu_);
    return made_;
  }

 private:
  void give_back(std::unique_ptr<S> s) {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(s));
  }

  mutable std::mutex mu_;
  std::function<std::unique_ptr<S>()> make_;
  std::vector<std::unique_ptr<S>> free_;
  size_t made_ = 0;
};

}  // namespace ds4::model
