// intrusive_ptr: a reference-counted pointer whose count lives in the object.
//
// Tensors and storages are handed around constantly; an intrusive count costs
// one atomic increment per copy and no separate control block allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace sdk {

class intrusive_target {
 public:
  intrusive_target() = default;
  intrusive_target(const intrusive_target&) = delete;
  intrusive_target& operator=(const intrusive_target&) = delete;
  virtual ~intrusive_target() = default;
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <typename T>
  friend class intrusive_ptr;
  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class intrusive_ptr {
 public:
  intrusive_ptr() noexcept = default;
  intrusive_ptr(std::nullptr_t) noexcept {}  // NOLINT
  // Takes a new reference to `p` (which may already be owned by other intrusive_ptrs).
  explicit intrusive_ptr(T* p) noexcept : p_(p) { retain(); }
  intrusive_ptr(const intrusive_ptr& o) noexcept : p_(o.p_) { retain(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.release()) {}  // NOLINT
  ~intrusive_ptr() { reset(); }

  intrusive_ptr& operator=(const intrusive_ptr& o) noexcept {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }

  void reset() noexcept {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  // Gives up ownership without decrementing; pair with reclaim().
  T* release() noexcept { T* p = p_; p_ = nullptr; return p; }
  static intrusive_ptr reclaim(T* p) noexcept { intrusive_ptr r; r.p_ = p; return r; }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  bool operator==(const intrusive_ptr& o) const noexcept { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr& o) const noexcept { return p_ != o.p_; }
  uint32_t use_count() const noexcept { return p_ ? p_->use_count() : 0; }

 private:
  void retain() noexcept {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  T* p_ = nullptr;
};

template <typename T, typename... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace sdk
