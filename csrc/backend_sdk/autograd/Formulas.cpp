// The C++ derivative formulas: Note [Derivative formula table] (detail/Formulas.h).
#include <backend_sdk/autograd/detail/Formulas.h>

#include <cstring>
#include <unordered_map>

#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/LinearAlgebra.h>
#include <backend_sdk/ops/MathFunctions.h>

namespace sdk::autograd {

namespace {

using namespace ::sdk::ops;

Tensor scaled(const Tensor& g, const Scalar& s) {
  if (!s.is_floating_point() && s.to_int() == 1) return g;
  if (s.is_floating_point() && s.to_double() == 1.0) return g;
  return mul(g, s);
}

// PyTorch's pow_backward: grad * exponent * self^(exponent - 1); zeros for exponent 0.
Tensor pow_backward(const Tensor& g, const Tensor& self, const Scalar& exponent) {
  const double e = exponent.to_double();
  if (e == 0.0) return mul(g, 0);
  Tensor d = e == 2.0 ? mul(self, 2) : mul(pow(self, Scalar(e - 1.0)), exponent);
  return mul(g, d);
}

std::vector<int64_t> reduced_dims(IntArrayRef sizes, const IValue& dim) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  if (dim.is_none() || (dim.is_int_list() && dim.to_int_list().empty())) {
    for (int64_t i = 0; i < n; ++i) dims.push_back(i);
    return dims;
  }
  for (int64_t d : dim.is_int_list() ? dim.to_int_list() : std::vector<int64_t>{dim.to_int()}) {
    dims.push_back(d < 0 ? d + std::max<int64_t>(n, 1) : d);
  }
  return dims;
}

// sum.dim_IntList's backward: put back the reduced dimensions (keepdim=False) and broadcast.
Tensor sum_backward(const Tensor& g, IntArrayRef sizes, const IValue& dim, bool keepdim) {
  if (keepdim || sizes.empty()) return expand_to(g, sizes);
  std::vector<int64_t> dims = reduced_dims(sizes, dim);
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> shape, strides;
  int64_t k = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    shape.push_back(reduced[i] ? 1 : sizes[i]);
    strides.push_back(reduced[i] ? 0 : g.stride(k++));
  }
  return expand_to(as_strided(g, shape, strides, g.storage_offset()), sizes);
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t reduced_numel(IntArrayRef sizes, const IValue& dim) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(sizes, dim)) n *= sizes.empty() ? 1 : sizes[static_cast<size_t>(d)];
  return n;
}

#define G (c.grads[0])
#define T(x) (c.tensor(#x))
#define S(x) (c.scalar(#x))
#define FLAG(x) (c.flag(#x))
#define ARG(x) (c.arg(#x))
#define SIZES(x) (c.sizes(#x))
#define DTYPE(x) (c.dtype(#x))
#define R (c.result(0))
#define GRAD(input, expr) \
  if (c.needs(#input)) c.set(#input, (expr));
#define SDK_DERIVATIVE(op, node, saves, ...) {op, #node, saves, [](FormulaContext& c) { __VA_ARGS__ }},

const Formula kFormulas[] = {
#include "derivatives.def"
};

#undef SDK_DERIVATIVE
#undef GRAD
#undef R
#undef DTYPE
#undef SIZES
#undef ARG
#undef FLAG
#undef S
#undef T
#undef G

bool is_tensor_type(const Argument& a) {
  const Type& t = a.type->is_optional() ? *a.type->elem : *a.type;
  return t.kind == TypeKind::Tensor;
}

// Builds every entry's FormulaInfo for the definitions current at first use
// (the aten operators are defined when the library loads, before any call).
struct Table {
  std::unordered_map<const SchemaRecord*, FormulaInfo> by_record;
  Table() {
    for (const Formula& f : kFormulas) {
      std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(f.op);
      if (!op || !op->entry().has_schema()) continue;
      const SchemaRecord* rec = op->entry().schema_record();
      const FunctionSchema& s = rec->schema;
      SDK_CHECK(!s.is_mutable() && s.returns.size() == 1, "derivatives.def: ", f.op,
                " must be a functional operator with one return");
      FormulaInfo info;
      info.formula = &f;
      info.num_returns = s.returns.size();
      info.saved.assign(s.arguments.size(), false);
      for (size_t i = 0; i < s.arguments.size(); ++i) {
        info.names.push_back(s.arguments[i].name);
        if (is_tensor_type(s.arguments[i])) info.tensor_args.push_back(static_cast<uint16_t>(i));
      }
      std::string saves = f.saves;
      size_t pos = 0;
      while (pos < saves.size()) {
        size_t end = saves.find(',', pos);
        if (end == std::string::npos) end = saves.size();
        std::string name = saves.substr(pos, end - pos);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (name == "result") {
          info.saves_result = true;
        } else if (!name.empty()) {
          std::optional<size_t> idx = s.argument_index(name);
          SDK_CHECK(idx.has_value(), "derivatives.def: ", f.op, " has no argument '", name, "'");
          info.saved[*idx] = true;
        }
        pos = end + 1;
      }
      by_record.emplace(rec, std::move(info));
    }
  }
};

}  // namespace

const FormulaInfo* formula_for(const OperatorHandle& op) {
  static const Table* table = new Table();  // never destroyed: read by calls during exit
  auto it = table->by_record.find(op.entry().schema_record());
  return it == table->by_record.end() ? nullptr : &it->second;
}

int FormulaContext::index(const char* name) const {
  const auto& names = node.info->names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::strcmp(names[i].c_str(), name) == 0) return static_cast<int>(i);
  }
  SDK_CHECK(false, node.name(), ": the formula reads an unknown argument '", name, "'");
  return -1;
}

Tensor FormulaContext::tensor(const char* name) const {
  const SavedVariable& v = node.saved[static_cast<size_t>(index(name))];
  SDK_CHECK(v.was_saved() || !node.released, kSecondBackwardMessage);
  SDK_CHECK(v.was_saved(), node.name(), ": the formula reads '", name, "', which derivatives.def does not save");
  return v.unpack(node.shared_from_this());
}

Scalar FormulaContext::scalar(const char* name) const {
  const IValue& v = arg(name);
  return v.is_none() ? Scalar(1) : v.to_scalar();
}

bool FormulaContext::flag(const char* name) const { return arg(name).to_bool(); }

IntArrayRef FormulaContext::sizes(const char* name) const {
  return node.arg_meta[static_cast<size_t>(index(name))].shape;
}

ScalarType FormulaContext::dtype(const char* name) const {
  return node.arg_meta[static_cast<size_t>(index(name))].dtype;
}

Tensor FormulaContext::result(size_t i) const {
  SDK_CHECK(i < node.results.size() && node.results[i].was_saved(), kSecondBackwardMessage);
  return node.results[i].unpack(node.shared_from_this());
}

bool FormulaContext::needs(const char* name) const {
  const int idx = index(name);
  const auto& pos = node.info->tensor_args;
  for (size_t k = 0; k < pos.size(); ++k) {
    if (pos[k] == idx) return node.next_edges()[k].is_valid();
  }
  return false;
}

variable_list FormulaNode::apply(variable_list&& grads) {
  // A released node still runs if its formula reads nothing saved (PyTorch: a graph whose nodes
  // saved nothing can be backpropagated twice); reading a freed SavedVariable raises.
  for (size_t i = 0; i < grads.size() && i < input_metadata.size(); ++i) {
    if (!grads[i].defined()) {  // no gradient flowed into this output: zeros, as PyTorch materializes them
      const InputMetadata& m = input_metadata[i];
      Tensor z = ops::empty(m.shape, m.dtype, m.device);
      ops::fill_(z, 0);
      grads[i] = z;
    }
  }
  FormulaContext c{*this, grads, std::vector<Tensor>(info->names.size())};
  info->formula->fn(c);
  variable_list result(next_edges_.size());
  for (size_t k = 0; k < next_edges_.size(); ++k) {
    if (!next_edges_[k].is_valid()) continue;
    const size_t arg = info->tensor_args[k];
    Tensor g = std::move(c.out[arg]);
    if (!g.defined()) continue;
    const InputMetadata& m = arg_meta[arg];
    if (!g.sizes().equals(m.shape)) g = ops::sum_to(g, m.shape);
    if (g.dtype() != m.dtype) g = ops::to(g, m.dtype);
    result[k] = std::move(g);
  }
  return result;
}

void FormulaNode::release_variables() {
  released = true;
  for (SavedVariable& v : saved) v.reset();
  for (SavedVariable& v : results) v.reset();
}

}  // namespace sdk::autograd
