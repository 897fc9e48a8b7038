// ArrayRef: a non-owning view of a contiguous array. Header-only (Note [Header-only APIs]).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace sdk {

// A non-owning view of a contiguous array (sizes, strides, dims, tensor
// lists), like c10::ArrayRef. It never outlives the array it views.
template <typename T>
class ArrayRef {
 public:
  ArrayRef() = default;
  ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // Like c10::ArrayRef: valid only while the braced list lives (a call argument).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> il) : data_(il.begin()), size_(il.size()) {}  // NOLINT
#pragma GCC diagnostic pop
  ArrayRef(const T& single) : data_(&single), size_(1) {}  // NOLINT
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& back() const { return data_[size_ - 1]; }
  std::vector<T> vec() const { return {begin(), end()}; }
  bool equals(ArrayRef o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;

inline std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << "[";
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << "]";
}

}  // namespace sdk
