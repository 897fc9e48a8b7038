// DimVector: sizes/strides with inline storage for up to kInlineDims dims,
// so creating a tensor of ordinary rank allocates nothing for its shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

#include <backend_sdk/headeronly/ArrayRef.h>

namespace sdk {

class DimVector {
 public:
  static constexpr size_t kInlineDims = 6;
  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) { resize(n, value); }
  DimVector(IntArrayRef a) { assign(a); }  // NOLINT
  DimVector(std::initializer_list<int64_t> il) { assign(IntArrayRef(il.begin(), il.size())); }
  DimVector(const DimVector& o) { assign(o); }
  DimVector(DimVector&& o) noexcept { move_from(std::move(o)); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) assign(o);
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) {
      free_heap();
      move_from(std::move(o));
    }
    return *this;
  }
  ~DimVector() { free_heap(); }

  void assign(IntArrayRef a) {
    resize(a.size());
    if (a.size()) std::memmove(data(), a.data(), a.size() * sizeof(int64_t));
  }
  void resize(size_t n, int64_t value = 0) {
    if (n > capacity_) grow(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity_) grow(capacity_ * 2);
    data()[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    std::memmove(data() + pos + 1, data() + pos, (size_ - 1 - pos) * sizeof(int64_t));
    data()[pos] = v;
  }
  void erase(size_t pos) {
    std::memmove(data() + pos, data() + pos + 1, (size_ - 1 - pos) * sizeof(int64_t));
    --size_;
  }

  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  operator IntArrayRef() const { return IntArrayRef(data(), size_); }  // NOLINT
  IntArrayRef ref() const { return IntArrayRef(data(), size_); }

 private:
  void grow(size_t n) {
    n = std::max(n, kInlineDims * 2);
    auto* p = new int64_t[n];
    if (size_) std::memcpy(p, data(), size_ * sizeof(int64_t));
    free_heap();
    heap_ = p;
    capacity_ = n;
  }
  void free_heap() {
    delete[] heap_;
    heap_ = nullptr;
    capacity_ = kInlineDims;
  }
  void move_from(DimVector&& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      capacity_ = o.capacity_;
      o.heap_ = nullptr;
      o.capacity_ = kInlineDims;
    } else {
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }

  int64_t inline_[kInlineDims];
  int64_t* heap_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = kInlineDims;
};

}  // namespace sdk
