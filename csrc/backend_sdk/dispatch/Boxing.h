// Conversions between unboxed C++ kernel arguments and boxed IValues.
//
// Note [Kernel argument types]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A C++ kernel's parameters use one canonical C++ type per schema type:
//   Tensor          const Tensor&            Tensor?     const std::optional<Tensor>&
//   Tensor[]        TensorList               int[]       IntArrayRef
//   Tensor?[]       OptionalTensorList (see Note [Lists of optional tensors])
//   int / SymInt    int64_t                  int?        std::optional<int64_t>
//   float           double                   float?      std::optional<double>
//   bool            bool                     bool?       std::optional<bool>
//   Scalar          const Scalar&            Scalar?     const std::optional<Scalar>&
//   ScalarType      ScalarType               ScalarType? std::optional<ScalarType>
//   Device          Device                   Device?     std::optional<Device>
//   str             std::string_view         int[]?      std::optional<IntArrayRef>
//   Layout?/MemoryFormat?   std::optional<int64_t>
//   Generator?      const std::optional<Generator>&
// and returns Tensor, std::tuple<Tensor, ...>, std::vector<Tensor>, void,
// or a Scalar/double/int64_t/bool. A kernel may take `DispatchKeySet` as its
// first parameter to redispatch. Caller and kernel must use the same
// signature; Dispatcher::call checks it (see KernelFunction::call).
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <backend_sdk/dispatch/IValue.h>

namespace sdk {

using TensorList = ArrayRef<Tensor>;

// Note [Lists of optional tensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `Tensor?[]` (aten::index.Tensor's indices) is OptionalTensorList in C++:
// a view of std::optional<Tensor>s, absent entries meaning "no index here".
// Boxed, it is a GenericList whose elements are None or Tensor IValues (what
// Python lists of tensors and Nones bind to); a list of only tensors
// (Tag::TensorList) is accepted too. Unboxing builds the optionals in a
// holder that lives until the kernel call returns (a temporary of the call
// expression), so no IValue tag of its own is needed.
using OptionalTensorList = ArrayRef<std::optional<Tensor>>;

namespace boxing {

template <typename T>
struct IValueTo;  // IValueTo<T>::get(IValue&) -> T for each canonical argument type

#define SDK_IVALUE_TO(T, expr)                          \
  template <>                                           \
  struct IValueTo<T> {                                  \
    static decltype(auto) get(IValue& v) { return expr; } \
  };
SDK_IVALUE_TO(const Tensor&, static_cast<const Tensor&>(v.to_tensor()))
SDK_IVALUE_TO(Tensor, v.to_tensor())
SDK_IVALUE_TO(int64_t, v.to_int())
SDK_IVALUE_TO(double, v.to_double())
SDK_IVALUE_TO(bool, v.to_bool())
SDK_IVALUE_TO(const Scalar&, v.to_scalar())
SDK_IVALUE_TO(Scalar, v.to_scalar())
SDK_IVALUE_TO(ScalarType, v.to_scalar_type())
SDK_IVALUE_TO(Device, v.to_device())
SDK_IVALUE_TO(std::string_view, std::string_view(v.to_string()))
SDK_IVALUE_TO(IntArrayRef, IntArrayRef(v.to_int_list()))
SDK_IVALUE_TO(TensorList, TensorList(v.to_tensor_list()))
SDK_IVALUE_TO(Generator, v.to_generator())
#undef SDK_IVALUE_TO

// Owns the optionals an OptionalTensorList argument views during a boxed call.
struct OptionalTensorListHolder {
  std::vector<std::optional<Tensor>> items;
  operator OptionalTensorList() const { return OptionalTensorList(items); }  // NOLINT
};
template <>
struct IValueTo<OptionalTensorList> {
  static OptionalTensorListHolder get(IValue& v) {
    OptionalTensorListHolder h;
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) h.items.emplace_back(t);
      return h;
    }
    for (const IValue& e : v.to_list()) {
      if (e.is_none()) {
        // Not emplace_back(std::nullopt): odr-using the inline variable std::nullopt
        // gives a vendor's library a STB_GNU_UNIQUE symbol, and glibc then never
        // unloads it (see test_cpp_registration.py).
        h.items.emplace_back();
      } else {
        h.items.emplace_back(e.to_tensor());
      }
    }
    return h;
  }
};

template <typename T>
struct IValueTo<std::optional<T>> {
  static std::optional<T> get(IValue& v) {
    if (v.is_none()) return std::nullopt;
    return IValueTo<T>::get(v);
  }
};
template <typename T>
struct IValueTo<const std::optional<T>&> : IValueTo<std::optional<T>> {};

// ---- boxing an unboxed argument ----
inline IValue to_ivalue(const Tensor& t) { return IValue(t); }
inline IValue to_ivalue(int64_t v) { return IValue(v); }
inline IValue to_ivalue(double v) { return IValue(v); }
inline IValue to_ivalue(bool v) { return IValue(v); }
inline IValue to_ivalue(const Scalar& v) { return IValue(v); }
inline IValue to_ivalue(ScalarType v) { return IValue(v); }
inline IValue to_ivalue(Device v) { return IValue(v); }
inline IValue to_ivalue(std::string_view v) { return IValue(std::string(v)); }
inline IValue to_ivalue(IntArrayRef v) { return IValue(v.vec()); }
inline IValue to_ivalue(TensorList v) { return IValue(v.vec()); }
inline IValue to_ivalue(const Generator& v) { return IValue(v); }
inline IValue to_ivalue(OptionalTensorList v) {
  GenericList l;
  l.reserve(v.size());
  for (const auto& t : v) {
    if (t && t->defined()) {
      l.emplace_back(*t);
    } else {
      l.emplace_back();
    }
  }
  return IValue(std::move(l));
}
template <typename T>
IValue to_ivalue(const std::optional<T>& v) {
  return v ? to_ivalue(*v) : IValue();
}

// ---- returns ----
template <typename T>
struct Returns;  // push(stack, value) and pop(stack) for each return type
template <>
struct Returns<void> {
  static constexpr size_t count = 0;
  static void pop(Stack&) {}
};
template <>
struct Returns<Tensor> {
  static constexpr size_t count = 1;
  static void push(Stack& s, Tensor t) { s.emplace_back(std::move(t)); }
  static Tensor pop(Stack& s) { return std::move(s.at(s.size() - 1).to_tensor()); }
};
template <>
struct Returns<std::vector<Tensor>> {
  static constexpr size_t count = 1;
  static void push(Stack& s, std::vector<Tensor> v) { s.emplace_back(std::move(v)); }
  static std::vector<Tensor> pop(Stack& s) { return s.at(s.size() - 1).to_tensor_list(); }
};
#define SDK_SCALAR_RETURN(T, getter)                              \
  template <>                                                     \
  struct Returns<T> {                                             \
    static constexpr size_t count = 1;                            \
    static void push(Stack& s, T v) { s.emplace_back(v); }        \
    static T pop(Stack& s) { return s.at(s.size() - 1).getter(); } \
  };
SDK_SCALAR_RETURN(int64_t, to_int)
SDK_SCALAR_RETURN(double, to_double)
SDK_SCALAR_RETURN(bool, to_bool)
SDK_SCALAR_RETURN(Scalar, to_scalar)
#undef SDK_SCALAR_RETURN
template <typename... Ts>
struct Returns<std::tuple<Ts...>> {
  static constexpr size_t count = sizeof...(Ts);
  static void push(Stack& s, std::tuple<Ts...> t) {
    std::apply([&](auto&&... e) { (Returns<std::decay_t<decltype(e)>>::push(s, std::move(e)), ...); }, std::move(t));
  }
  static std::tuple<Ts...> pop(Stack& s) { return pop_impl(s, std::index_sequence_for<Ts...>{}); }
  template <size_t... I>
  static std::tuple<Ts...> pop_impl(Stack& s, std::index_sequence<I...>) {
    size_t base = s.size() - sizeof...(Ts);
    return std::tuple<Ts...>(pop_at<Ts>(s, base + I)...);
  }
  template <typename T>
  static T pop_at(Stack& s, size_t i) {
    Stack one{s.at(i)};
    return Returns<T>::pop(one);
  }
};

// ---- dispatch keys of unboxed arguments ----
struct KeyCollector {
  uint64_t repr = 0;
  void add(const Tensor& t) {
    if (t.defined()) repr |= t.key_set().raw_repr();
  }
  void add(const std::optional<Tensor>& t) {
    if (t && t->defined()) repr |= t->key_set().raw_repr();
  }
  void add(TensorList ts) {
    for (const Tensor& t : ts) add(t);
  }
  void add(OptionalTensorList ts) {
    for (const auto& t : ts) add(t);
  }
  template <typename T>
  void add(const T&) {}
};

// ---- does any unboxed argument take part in autograd? ----
// See Note [Autograd fallback fast path] (csrc/backend_sdk/ops/detail/Autograd.h).
// An inference tensor takes no part in autograd even when its flag is set (made with
// requires_grad=True in inference mode): as PyTorch's, computing with it outside inference mode
// records nothing (Note [Inference tensors]); its .requires_grad still reads the flag.
inline bool tensor_requires_grad(const Tensor& t) {
  if (!t.defined()) return false;
  const AutogradMetaInterface* m = t.impl()->autograd_meta();
  return m != nullptr && !t.impl()->is_inference() && m->requires_grad();
}
struct RequiresGradCollector {
  bool any = false;
  void add(const Tensor& t) { any = any || tensor_requires_grad(t); }
  void add(const std::optional<Tensor>& t) { any = any || (t && tensor_requires_grad(*t)); }
  void add(TensorList ts) {
    for (const Tensor& t : ts) add(t);
  }
  void add(OptionalTensorList ts) {
    for (const auto& t : ts) add(t);
  }
  template <typename T>
  void add(const T&) {}
};
template <typename... Args>
inline bool any_requires_grad(const Args&... args) {
  RequiresGradCollector c;
  (c.add(args), ...);
  return c.any;
}

template <typename... Args>
inline DispatchKeySet keys_of(const Args&... args) {
  KeyCollector c;
  (c.add(args), ...);
  return DispatchKeySet(DispatchKeySet::RawTag{}, c.repr);
}

}  // namespace boxing
}  // namespace sdk
