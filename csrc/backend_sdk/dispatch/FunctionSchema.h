// Operator schemas: the data model and the parser for PyTorch's schema grammar
// (the `func:` lines of native_functions.yaml), e.g.
//
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//
// Note [Schema text is canonical]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// parse_schema() accepts any whitespace between tokens; FunctionSchema::str()
// prints PyTorch's canonical form (", " between arguments, "*, " before the
// first kwarg-only argument, " -> " before the returns, a single return
// without parentheses, several or none inside "(...)"). For every schema s,
// parse_schema(s.str()).str() == s.str(), so the canonical text can be used as
// a key. Defaults are kept as written (see Argument::default_text) except that
// list defaults are re-spaced ("[0,1]" -> "[0, 1]") and string defaults are
// re-quoted with double quotes ('none' -> "none"), as PyTorch prints them.
//
// Note [Alias annotations]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An alias annotation may only follow the base name `Tensor`:
//   Tensor(a)       a view of alias set a                before={a}
//   Tensor(a!)      writes to alias set a (mutable)      before={a}, is_write
//   Tensor(a -> *)  a, whose outputs may alias anything  before={a}, after={*}
//   Tensor(a|b)     several sets                         before={a,b}
// after_sets is empty when no "->" is written (PyTorch would copy before_sets).
// The annotation is stored on the Argument, not on the Type. For list types
// (`Tensor(a!)[] out`, `Tensor(a)[]` returns) and optional types
// (`Tensor(a!)? out`) the annotation semantically belongs to the *element*
// Tensor(s); Argument::str() prints it right after `Tensor`, where it was
// written. Annotations on any other base type are a parse error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <backend_sdk/core/Macros.h>

namespace sdk {

enum class TypeKind : uint8_t {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Str,
  Scalar,
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  Generator,
  Storage,
  Dimname,
  Any,
  List,
  Optional,
  NoneType,
};

// The schema spelling of a base kind ("Tensor", "int", "SymInt", ...);
// "List" / "Optional" for the two constructors.
SDK_API const char* type_kind_name(TypeKind kind);

struct Type;
using TypePtr = std::shared_ptr<const Type>;

// An immutable schema type. Base types are shared singletons (Type::get);
// List and Optional wrap an element type.
struct SDK_API Type {
  TypeKind kind;
  TypePtr elem;                       // element for List / Optional, else null
  std::optional<int64_t> fixed_size;  // int[2] -> 2 (List only)

  // "Tensor", "int[]", "int[2]", "Tensor?", "Tensor?[]", "SymInt[1]?", ...
  std::string str() const;

  // The singleton of a base kind. Throws for List / Optional (use ListOf /
  // OptionalOf).
  static TypePtr get(TypeKind kind);
  static TypePtr ListOf(TypePtr elem, std::optional<int64_t> size = std::nullopt);
  // Throws if elem is already optional (T?? is not a schema type).
  static TypePtr OptionalOf(TypePtr elem);

  bool is_optional() const { return kind == TypeKind::Optional; }
  // The innermost base kind: Tensor for Tensor?[], int for int[2]?.
  TypeKind base_kind() const;
};

SDK_API bool operator==(const Type& a, const Type& b);
inline bool operator!=(const Type& a, const Type& b) { return !(a == b); }

// See Note [Alias annotations].
struct SDK_API AliasInfo {
  std::vector<std::string> before_sets;
  std::vector<std::string> after_sets;
  bool is_write = false;
  // "a!", "a", "a -> *", "a|b" (without the parentheses).
  std::string str() const;
};

SDK_API bool operator==(const AliasInfo& a, const AliasInfo& b);

struct SDK_API Argument {
  std::string name;  // may be empty for returns
  TypePtr type;
  // Canonical text of the default, see Note [Schema text is canonical]:
  // "1", "-1", "1e-05", "-inf", "None", "True", "False", "[0, 1]", "[]",
  // "\"mean\"", "contiguous_format", "long", "Mean". Validated against `type`
  // by the parser; an int list of fixed size may default to a single value
  // ("int[2] stride=1", meaning [1, 1]) as in PyTorch.
  std::optional<std::string> default_text;
  bool kwarg_only = false;
  std::optional<AliasInfo> alias_info;  // see Note [Alias annotations]

  bool is_write() const { return alias_info && alias_info->is_write; }
  // "Tensor(a!) self", "Scalar alpha=1", "Tensor(a)[]" (no "*").
  std::string str() const;
};

SDK_API bool operator==(const Argument& a, const Argument& b);
inline bool operator!=(const Argument& a, const Argument& b) { return !(a == b); }

struct SDK_API FunctionSchema {
  std::string ns;             // "aten" for "aten::add.Tensor(...)"; empty if not given
  std::string name;           // "add"
  std::string overload_name;  // "Tensor"; empty if none
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  bool is_vararg = false;  // "(Tensor x, ...)"
  bool is_varret = false;  // "-> ..." / "-> (Tensor, ...)"

  // "aten::add.Tensor"; no ".overload" if overload_name is empty, no "ns::"
  // if ns is empty.
  std::string qualified_name() const;
  // Canonical, round-trippable text; see Note [Schema text is canonical].
  std::string str() const;

  bool is_mutable() const;  // any argument with alias_info->is_write
  bool is_mutable_arg(size_t i) const;  // throws IndexError when i is out of range
  std::vector<size_t> mutable_argument_indices() const;
  // PyTorch's out= convention: some kwarg-only argument is mutable.
  bool is_out_fn() const;
  // The first argument is `Tensor(a!) self` and the single return is a
  // `Tensor(a!)` with the same alias set.
  bool is_inplace() const;
  // Number of arguments before '*' (kwarg-only arguments always come last).
  size_t num_positional() const;
  std::optional<size_t> argument_index(std::string_view name) const;
};

// Structural equality; equivalent to comparing str().
SDK_API bool operator==(const FunctionSchema& a, const FunctionSchema& b);
inline bool operator!=(const FunctionSchema& a, const FunctionSchema& b) { return !(a == b); }
SDK_API std::ostream& operator<<(std::ostream& os, const FunctionSchema& schema);
SDK_API std::ostream& operator<<(std::ostream& os, const Argument& arg);
SDK_API std::ostream& operator<<(std::ostream& os, const Type& type);

// Parses "ns::name.overload(args) -> returns" (ns and overload optional).
// Throws sdk::Error(ErrorKind::Value) on malformed input; the message names
// the 0-based position and repeats the text with a caret under it:
//   Invalid schema 'aten::foo(Tensor x, int) -> Tensor': expected an argument name at position 23
//       aten::foo(Tensor x, int) -> Tensor
//                              ^
SDK_API FunctionSchema parse_schema(std::string_view text);

// Parses just a name "ns::name.overload" / "name.overload" / "name" into
// (ns, name, overload); missing parts are empty strings. Errors as above
// ("Invalid operator name '...': ...").
SDK_API std::tuple<std::string, std::string, std::string> parse_operator_name(std::string_view text);

}  // namespace sdk
