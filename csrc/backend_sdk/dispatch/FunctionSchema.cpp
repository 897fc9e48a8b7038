// Function schemas: data model printing/queries and a hand-written
// recursive-descent parser for PyTorch's schema grammar.
//
// Grammar (whitespace between tokens is ignored):
//
//   schema      := opname '(' arguments ')' '->' returns
//   opname      := [IDENT '::'] IDENT ['.' IDENT]
//   arguments   := <empty> | arg_item (',' arg_item)*
//   arg_item    := '*' | '...' | type IDENT ['=' default]
//   returns     := '(' ')' | '(' ret (',' ret)* ')' | ret
//   ret         := '...' | type [IDENT]
//   type        := BASE [alias] ('?' | '[' [NUMBER] ']')*
//   alias       := '(' sets ['!'] ['->' sets] ')'        (only after Tensor)
//   sets        := (IDENT | '*') ('|' (IDENT | '*'))*
//   default     := ['-'] NUMBER | '-inf' | IDENT | STRING | '[' [default (',' default)*] ']'
//
// Note [Schema parse errors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every error is an sdk::Error of kind Value (ValueError in Python) whose
// message is
//   Invalid schema '<text>': <what> at position <N>
//       <text>
//       <N spaces>^
// N is the 0-based byte offset of the offending token (the end of the text
// when input ran out). Whitespace in the echoed text is flattened to spaces
// so the caret lines up. Errors are raised at the first offending token in
// reading order; semantic checks (unknown type, bad default, duplicate name,
// misplaced non-default argument) point at the token they are about.
#include <backend_sdk/dispatch/FunctionSchema.h>

#include <cerrno>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <unordered_set>

#include <backend_sdk/core/Exception.h>

namespace sdk {

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

namespace {

struct BaseTypeName {
  TypeKind kind;
  const char* name;
};

// The schema spelling of every base kind (List / Optional are constructors).
constexpr BaseTypeName kBaseTypes[] = {
    {TypeKind::Tensor, "Tensor"},       {TypeKind::Int, "int"},
    {TypeKind::SymInt, "SymInt"},       {TypeKind::Float, "float"},
    {TypeKind::Bool, "bool"},           {TypeKind::Str, "str"},
    {TypeKind::Scalar, "Scalar"},       {TypeKind::ScalarType, "ScalarType"},
    {TypeKind::Layout, "Layout"},       {TypeKind::Device, "Device"},
    {TypeKind::MemoryFormat, "MemoryFormat"}, {TypeKind::Generator, "Generator"},
    {TypeKind::Storage, "Storage"},     {TypeKind::Dimname, "Dimname"},
    {TypeKind::Any, "Any"},             {TypeKind::NoneType, "NoneType"},
};

constexpr size_t kNumKinds = static_cast<size_t>(TypeKind::NoneType) + 1;

std::optional<TypeKind> base_kind_from_name(std::string_view name) {
  for (const auto& entry : kBaseTypes) {
    if (name == entry.name) return entry.kind;
  }
  return std::nullopt;
}

bool is_constructor(TypeKind kind) { return kind == TypeKind::List || kind == TypeKind::Optional; }

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// Prints `type`, putting the alias annotation (if any) right after the base
// name, where the grammar requires it: Tensor(a!)[] , Tensor(a)? .
void print_type(std::string& out, const Type& type, const AliasInfo* alias) {
  switch (type.kind) {
    case TypeKind::List:
      print_type(out, *type.elem, alias);
      out += '[';
      if (type.fixed_size) out += std::to_string(*type.fixed_size);
      out += ']';
      return;
    case TypeKind::Optional:
      print_type(out, *type.elem, alias);
      out += '?';
      return;
    default:
      out += type_kind_name(type.kind);
      if (alias) {
        out += '(';
        out += alias->str();
        out += ')';
      }
      return;
  }
}

}  // namespace

const char* type_kind_name(TypeKind kind) {
  if (kind == TypeKind::List) return "List";
  if (kind == TypeKind::Optional) return "Optional";
  for (const auto& entry : kBaseTypes) {
    if (entry.kind == kind) return entry.name;
  }
  return "<unknown>";
}

TypePtr Type::get(TypeKind kind) {
  SDK_CHECK(!is_constructor(kind), "Type::get(", type_kind_name(kind),
            "): List and Optional are built with Type::ListOf / Type::OptionalOf");
  static const std::vector<TypePtr> singletons = [] {
    std::vector<TypePtr> out(kNumKinds);
    for (const auto& entry : kBaseTypes) {
      out[static_cast<size_t>(entry.kind)] =
          std::make_shared<const Type>(Type{entry.kind, nullptr, std::nullopt});
    }
    return out;
  }();
  return singletons.at(static_cast<size_t>(kind));
}

TypePtr Type::ListOf(TypePtr elem, std::optional<int64_t> size) {
  SDK_CHECK(elem != nullptr, "Type::ListOf: element type must not be null");
  SDK_CHECK(!size || *size >= 0, "Type::ListOf: fixed size must be non-negative, got ", *size);
  return std::make_shared<const Type>(Type{TypeKind::List, std::move(elem), size});
}

TypePtr Type::OptionalOf(TypePtr elem) {
  SDK_CHECK(elem != nullptr, "Type::OptionalOf: element type must not be null");
  SDK_CHECK(elem->kind != TypeKind::Optional, "Type::OptionalOf: '", elem->str(),
            "' is already optional");
  return std::make_shared<const Type>(Type{TypeKind::Optional, std::move(elem), std::nullopt});
}

std::string Type::str() const {
  std::string out;
  print_type(out, *this, nullptr);
  return out;
}

TypeKind Type::base_kind() const {
  const Type* t = this;
  while (is_constructor(t->kind)) t = t->elem.get();
  return t->kind;
}

bool operator==(const Type& a, const Type& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.fixed_size != b.fixed_size) return false;
  if (!a.elem || !b.elem) return a.elem == b.elem;
  return *a.elem == *b.elem;
}

std::ostream& operator<<(std::ostream& os, const Type& type) { return os << type.str(); }

// ---------------------------------------------------------------------------
// AliasInfo / Argument / FunctionSchema
// ---------------------------------------------------------------------------

std::string AliasInfo::str() const {
  std::string out = join(before_sets, "|");
  if (is_write) out += '!';
  if (!after_sets.empty()) {
    out += " -> ";
    out += join(after_sets, "|");
  }
  return out;
}

bool operator==(const AliasInfo& a, const AliasInfo& b) {
  return a.is_write == b.is_write && a.before_sets == b.before_sets && a.after_sets == b.after_sets;
}

std::string Argument::str() const {
  std::string out;
  if (type) {
    print_type(out, *type, alias_info ? &*alias_info : nullptr);
  } else {
    out += "<null type>";
  }
  if (!name.empty()) {
    out += ' ';
    out += name;
  }
  if (default_text) {
    out += '=';
    out += *default_text;
  }
  return out;
}

bool operator==(const Argument& a, const Argument& b) {
  const bool same_type = (a.type && b.type) ? *a.type == *b.type : a.type == b.type;
  return same_type && a.name == b.name && a.default_text == b.default_text &&
         a.kwarg_only == b.kwarg_only && a.alias_info == b.alias_info;
}

std::ostream& operator<<(std::ostream& os, const Argument& arg) { return os << arg.str(); }

std::string FunctionSchema::qualified_name() const {
  std::string out;
  if (!ns.empty()) {
    out += ns;
    out += "::";
  }
  out += name;
  if (!overload_name.empty()) {
    out += '.';
    out += overload_name;
  }
  return out;
}

// Mirrors PyTorch's operator<<(std::ostream&, const FunctionSchema&).
std::string FunctionSchema::str() const {
  std::string out = qualified_name();
  out += '(';
  bool seen_kwarg_only = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i > 0) out += ", ";
    if (arguments[i].kwarg_only && !seen_kwarg_only) {
      out += "*, ";
      seen_kwarg_only = true;
    }
    out += arguments[i].str();
  }
  if (is_vararg) {
    if (!arguments.empty()) out += ", ";
    out += "...";
  }
  out += ") -> ";
  // A single return (or a bare "...") prints without parentheses, even when
  // it is named; anything else is a parenthesised tuple, "()" when empty.
  const bool need_paren = !((returns.size() == 1 && !is_varret) || (returns.empty() && is_varret));
  if (need_paren) out += '(';
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i > 0) out += ", ";
    out += returns[i].str();
  }
  if (is_varret) {
    if (!returns.empty()) out += ", ";
    out += "...";
  }
  if (need_paren) out += ')';
  return out;
}

bool FunctionSchema::is_mutable() const {
  for (const auto& arg : arguments) {
    if (arg.is_write()) return true;
  }
  return false;
}

bool FunctionSchema::is_mutable_arg(size_t i) const {
  SDK_CHECK_INDEX(i < arguments.size(), "argument index ", i, " is out of range for ",
                  qualified_name(), " with ", arguments.size(), " arguments");
  return arguments[i].is_write();
}

std::vector<size_t> FunctionSchema::mutable_argument_indices() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].is_write()) out.push_back(i);
  }
  return out;
}

bool FunctionSchema::is_out_fn() const {
  for (const auto& arg : arguments) {
    if (arg.kwarg_only && arg.is_write()) return true;
  }
  return false;
}

bool FunctionSchema::is_inplace() const {
  if (arguments.empty() || returns.size() != 1 || is_varret) return false;
  const Argument& self = arguments.front();
  const Argument& ret = returns.front();
  return self.name == "self" && self.type && self.type->kind == TypeKind::Tensor && self.is_write() &&
         ret.type && ret.type->kind == TypeKind::Tensor && ret.is_write() &&
         ret.alias_info->before_sets == self.alias_info->before_sets;
}

size_t FunctionSchema::num_positional() const {
  // Note: the parser guarantees kwarg-only arguments form a suffix.
  size_t n = 0;
  while (n < arguments.size() && !arguments[n].kwarg_only) ++n;
  return n;
}

std::optional<size_t> FunctionSchema::argument_index(std::string_view arg_name) const {
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name == arg_name) return i;
  }
  return std::nullopt;
}

bool operator==(const FunctionSchema& a, const FunctionSchema& b) {
  return a.ns == b.ns && a.name == b.name && a.overload_name == b.overload_name &&
         a.is_vararg == b.is_vararg && a.is_varret == b.is_varret && a.arguments == b.arguments &&
         a.returns == b.returns;
}

std::ostream& operator<<(std::ostream& os, const FunctionSchema& schema) { return os << schema.str(); }

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

namespace {

// Raises the positioned ValueError; see Note [Schema parse errors].
struct Reporter {
  std::string_view text;
  const char* what;  // "schema" or "operator name"

  [[noreturn]] void fail(size_t pos, const std::string& msg) const {
    std::string shown(text);
    for (char& c : shown) {
      if (c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v') c = ' ';
    }
    std::ostringstream os;
    os << "Invalid " << what << " '" << shown << "': " << msg << " at position " << pos << "\n    "
       << shown << "\n    " << std::string(pos, ' ') << '^';
    SDK_THROW(Value, os.str());
  }
};

enum class Tok : uint8_t {
  End,
  Ident,
  Number,
  String,  // text includes the quotes; decoded by the parser
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Star,
  Question,
  Bang,
  Pipe,
  Equals,
  Arrow,  // ->
  Minus,
  Dot,
  DoubleColon,
  Ellipsis,  // ...
};

struct Token {
  Tok kind = Tok::End;
  size_t pos = 0;
  std::string_view text;
};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Note [Lazy lexing]
// ~~~~~~~~~~~~~~~~~~
// Tokens are produced on demand with one token of lookahead, so a bad
// character late in the text never hides a syntax error earlier in it.
class Lexer {
 public:
  Lexer(std::string_view src, const Reporter& rep) : src_(src), rep_(rep) {}

  const Token& peek() {
    if (!has_peeked_) {
      peeked_ = lex();
      has_peeked_ = true;
    }
    return peeked_;
  }
  Token next() {
    Token t = peek();
    has_peeked_ = false;
    return t;
  }
  bool next_if(Tok kind) {
    if (peek().kind != kind) return false;
    next();
    return true;
  }

 private:
  Token make(Tok kind, size_t start, size_t len) {
    pos_ = start + len;
    return Token{kind, start, src_.substr(start, len)};
  }

  Token lex() {
    while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    const size_t start = pos_;
    if (start >= src_.size()) return Token{Tok::End, src_.size(), {}};
    const char c = src_[start];
    auto at = [&](size_t i) { return start + i < src_.size() ? src_[start + i] : '\0'; };

    if (is_ident_start(c)) {
      size_t len = 1;
      while (is_ident_char(at(len))) ++len;
      return make(Tok::Ident, start, len);
    }
    if (is_digit(c)) {
      // digits ['.' digits*] [('e'|'E') ['+'|'-'] digits]
      size_t len = 1;
      while (is_digit(at(len))) ++len;
      if (at(len) == '.') {
        ++len;
        while (is_digit(at(len))) ++len;
      }
      if (at(len) == 'e' || at(len) == 'E') {
        size_t exp = len + 1;
        if (at(exp) == '+' || at(exp) == '-') ++exp;
        if (is_digit(at(exp))) {
          len = exp;
          while (is_digit(at(len))) ++len;
        }
      }
      return make(Tok::Number, start, len);
    }
    if (c == '"' || c == '\'') {
      size_t len = 1;
      while (start + len < src_.size() && at(len) != c) {
        len += (at(len) == '\\') ? 2 : 1;
      }
      if (start + len >= src_.size()) rep_.fail(start, "unterminated string literal");
      return make(Tok::String, start, len + 1);
    }
    switch (c) {
      case '(': return make(Tok::LParen, start, 1);
      case ')': return make(Tok::RParen, start, 1);
      case '[': return make(Tok::LBracket, start, 1);
      case ']': return make(Tok::RBracket, start, 1);
      case ',': return make(Tok::Comma, start, 1);
      case '*': return make(Tok::Star, start, 1);
      case '?': return make(Tok::Question, start, 1);
      case '!': return make(Tok::Bang, start, 1);
      case '|': return make(Tok::Pipe, start, 1);
      case '=': return make(Tok::Equals, start, 1);
      case '-': return at(1) == '>' ? make(Tok::Arrow, start, 2) : make(Tok::Minus, start, 1);
      case '.':
        return (at(1) == '.' && at(2) == '.') ? make(Tok::Ellipsis, start, 3) : make(Tok::Dot, start, 1);
      case ':':
        if (at(1) == ':') return make(Tok::DoubleColon, start, 2);
        break;
      default:
        break;
    }
    std::string shown;
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) {
      shown = std::string(1, c);
    } else {
      static const char* hex = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      shown = std::string("\\x") + hex[u >> 4] + hex[u & 15];
    }
    rep_.fail(start, "unexpected character '" + shown + "'");
  }

  std::string_view src_;
  const Reporter& rep_;
  size_t pos_ = 0;
  Token peeked_;
  bool has_peeked_ = false;
};

// ---------------------------------------------------------------------------
// Default values
// ---------------------------------------------------------------------------

// A parsed default value, before it is checked against the argument's type.
struct Literal {
  enum class Kind : uint8_t { Int, Float, Bool, None, String, Ident, List };
  Kind kind = Kind::None;
  size_t pos = 0;
  std::string text;  // as written (numbers with their '-'), decoded for String
  std::vector<Literal> elems;  // List only
};

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

// The canonical default text; see Note [Schema text is canonical].
std::string render(const Literal& lit) {
  switch (lit.kind) {
    case Literal::Kind::String:
      return quote(lit.text);
    case Literal::Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < lit.elems.size(); ++i) {
        if (i > 0) out += ", ";
        out += render(lit.elems[i]);
      }
      return out + "]";
    }
    default:
      return lit.text;
  }
}

bool one_of(std::string_view s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

// Note [Enum-like defaults]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// native_functions.yaml writes some defaults as bare identifiers:
// `int reduction=Mean`, `ScalarType? dtype=long`,
// `MemoryFormat memory_format=contiguous_format`, `Layout layout=strided`.
// They are kept verbatim; these tables only reject typos.
bool is_reduction_name(std::string_view s) { return one_of(s, {"Mean", "Sum"}); }

bool is_scalar_type_name(std::string_view s) {
  return one_of(s, {// Python spellings
                    "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "bfloat16", "complex32", "complex64",
                    "complex128", "bool", "half", "float", "double", "long", "int", "short",
                    "char", "byte", "cfloat", "cdouble", "chalf", "complex",
                    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                    // c10::ScalarType enumerator spellings
                    "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double",
                    "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool", "BFloat16",
                    "UInt16", "UInt32", "UInt64", "Float8_e4m3fn", "Float8_e5m2",
                    "Float8_e4m3fnuz", "Float8_e5m2fnuz"});
}

bool is_layout_name(std::string_view s) {
  return one_of(s, {"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                    "sparse_bsc", "_mkldnn", "mkldnn", "jagged"});
}

bool is_memory_format_name(std::string_view s) {
  return one_of(s, {"contiguous_format", "preserve_format", "channels_last", "channels_last_3d"});
}

// Returns the first literal within `lit` that does not fit `type`, or null.
// None fits only optional types (and NoneType / Any). A list literal fits a
// list type when every element fits the element type; a single value fits a
// *fixed-size* list whose element type it fits (PyTorch's `int[2] stride=1`).
const Literal* mismatch(const Type& type, const Literal& lit) {
  using K = Literal::Kind;
  if (type.kind == TypeKind::Any) return nullptr;
  if (lit.kind == K::None) {
    return (type.kind == TypeKind::Optional || type.kind == TypeKind::NoneType) ? nullptr : &lit;
  }
  auto ok_if = [&](bool ok) { return ok ? nullptr : &lit; };
  switch (type.kind) {
    case TypeKind::Optional:
      return mismatch(*type.elem, lit);
    case TypeKind::List:
      if (lit.kind == K::List) {
        for (const Literal& e : lit.elems) {
          if (const Literal* bad = mismatch(*type.elem, e)) return bad;
        }
        return nullptr;
      }
      return ok_if(type.fixed_size.has_value() && mismatch(*type.elem, lit) == nullptr);
    case TypeKind::Int:
    case TypeKind::SymInt:
      return ok_if(lit.kind == K::Int || (lit.kind == K::Ident && is_reduction_name(lit.text)));
    case TypeKind::Float:
      return ok_if(lit.kind == K::Int || lit.kind == K::Float);
    case TypeKind::Bool:
      return ok_if(lit.kind == K::Bool);
    case TypeKind::Scalar:
      return ok_if(lit.kind == K::Int || lit.kind == K::Float || lit.kind == K::Bool);
    case TypeKind::Str:
    case TypeKind::Device:   // Device d="cpu"
    case TypeKind::Dimname:  // Dimname d="N"
      return ok_if(lit.kind == K::String);
    case TypeKind::ScalarType:
      return ok_if(lit.kind == K::Ident && is_scalar_type_name(lit.text));
    case TypeKind::Layout:
      return ok_if(lit.kind == K::Ident && is_layout_name(lit.text));
    case TypeKind::MemoryFormat:
      return ok_if(lit.kind == K::Ident && is_memory_format_name(lit.text));
    default:  // Tensor, Generator, Storage, NoneType: only None (handled above)
      return &lit;
  }
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, const char* what) : rep_{text, what}, lex_(text, rep_) {}

  FunctionSchema parse_schema() {
    FunctionSchema schema;
    parse_name(schema.ns, schema.name, schema.overload_name);
    if (lex_.peek().kind != Tok::LParen) fail(lex_.peek().pos, "expected '(' to begin the argument list");
    lex_.next();
    parse_arguments(schema);
    if (!lex_.next_if(Tok::Arrow)) fail(lex_.peek().pos, "expected '->' after the argument list");
    parse_returns(schema);
    return schema;
  }

  std::tuple<std::string, std::string, std::string> parse_name_only() {
    std::string ns, name, overload;
    parse_name(ns, name, overload);
    expect_end();
    return {std::move(ns), std::move(name), std::move(overload)};
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& msg) const { rep_.fail(pos, msg); }

  Token expect(Tok kind, const char* what) {
    if (lex_.peek().kind != kind) fail(lex_.peek().pos, std::string("expected ") + what);
    return lex_.next();
  }

  void expect_end() {
    if (lex_.peek().kind != Tok::End) fail(lex_.peek().pos, "unexpected trailing text");
  }

  // opname := [IDENT '::'] IDENT ['.' IDENT]
  void parse_name(std::string& ns, std::string& name, std::string& overload) {
    Token first = expect(Tok::Ident, "an operator name");
    if (lex_.next_if(Tok::DoubleColon)) {
      ns = std::string(first.text);
      name = std::string(expect(Tok::Ident, "an operator name after '::'").text);
    } else {
      name = std::string(first.text);
    }
    if (lex_.next_if(Tok::Dot)) {
      overload = std::string(expect(Tok::Ident, "an overload name after '.'").text);
    }
  }

  // Called after '('; consumes through ')'.
  //
  // Note [Argument list invariants]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // After parsing: argument names are unique and non-empty; kwarg-only
  // arguments (those after '*') form a suffix of `arguments`; every positional
  // argument after one with a default also has a default (kwarg-only
  // arguments may mix freely, e.g. `*, Scalar alpha=1, Tensor(a!) out`);
  // '...' (is_vararg) is last.
  void parse_arguments(FunctionSchema& schema) {
    if (lex_.next_if(Tok::RParen)) return;
    std::unordered_set<std::string> names;
    bool kwarg_only = false;
    bool seen_positional_default = false;
    for (;;) {
      const Token& tok = lex_.peek();
      if (tok.kind == Tok::Star) {
        if (kwarg_only) fail(tok.pos, "'*' may appear only once in an argument list");
        const size_t star_pos = lex_.next().pos;
        kwarg_only = true;
        if (lex_.peek().kind == Tok::RParen) fail(star_pos, "named arguments must follow bare '*'");
        expect(Tok::Comma, "',' after '*'");
        continue;
      }
      if (tok.kind == Tok::Ellipsis) {
        lex_.next();
        schema.is_vararg = true;
        expect(Tok::RParen, "')' after '...' (it must be the last argument)");
        return;
      }
      ParsedArg parsed = parse_argument(/*is_return=*/false, &names);
      Argument& arg = parsed.arg;
      arg.kwarg_only = kwarg_only;
      if (!kwarg_only) {
        if (arg.default_text) {
          seen_positional_default = true;
        } else if (seen_positional_default) {
          fail(parsed.start, "non-default argument '" + arg.name + "' follows default argument");
        }
      }
      schema.arguments.push_back(std::move(arg));
      if (lex_.next_if(Tok::Comma)) continue;
      if (lex_.next_if(Tok::RParen)) return;
      fail(lex_.peek().pos, "expected ',' or ')' after an argument");
    }
  }

  // Called after '->'; consumes through the end of the text.
  void parse_returns(FunctionSchema& schema) {
    std::unordered_set<std::string> names;
    if (lex_.next_if(Tok::LParen)) {
      if (!lex_.next_if(Tok::RParen)) {
        for (;;) {
          if (lex_.next_if(Tok::Ellipsis)) {
            schema.is_varret = true;
            expect(Tok::RParen, "')' after '...' (it must be the last return)");
            break;
          }
          schema.returns.push_back(parse_argument(/*is_return=*/true, &names).arg);
          if (lex_.next_if(Tok::Comma)) continue;
          if (lex_.next_if(Tok::RParen)) break;
          fail(lex_.peek().pos, "expected ',' or ')' after a return");
        }
      }
    } else if (lex_.next_if(Tok::Ellipsis)) {
      schema.is_varret = true;
    } else {
      schema.returns.push_back(parse_argument(/*is_return=*/true, &names).arg);
      if (lex_.peek().kind == Tok::Comma) {
        fail(lex_.peek().pos, "several returns must be enclosed in parentheses");
      }
    }
    expect_end();
  }

  struct ParsedArg {
    Argument arg;
    size_t start;  // position of the type
  };

  // arg := type IDENT ['=' default]      ret := type [IDENT]
  ParsedArg parse_argument(bool is_return, std::unordered_set<std::string>* names) {
    ParsedArg out{Argument{}, lex_.peek().pos};
    Argument& arg = out.arg;
    arg.type = parse_type(arg.alias_info);
    if (lex_.peek().kind == Tok::Ident) {
      Token tok = lex_.next();
      arg.name = std::string(tok.text);
      if (!names->insert(arg.name).second) {
        fail(tok.pos, std::string(is_return ? "duplicate return name '" : "duplicate argument name '") +
                          arg.name + "'");
      }
    } else if (!is_return) {
      fail(lex_.peek().pos, "expected an argument name");
    }
    if (lex_.peek().kind == Tok::Equals) {
      if (is_return) fail(lex_.peek().pos, "return values cannot have default values");
      lex_.next();
      arg.default_text = parse_default(arg);
    }
    return out;
  }

  // type := BASE [alias] ('?' | '[' [NUMBER] ']')*
  TypePtr parse_type(std::optional<AliasInfo>& alias) {
    const Token& head = lex_.peek();
    if (head.kind != Tok::Ident) fail(head.pos, "expected a type");
    Token base = lex_.next();
    std::optional<TypeKind> kind = base_kind_from_name(base.text);
    if (!kind) fail(base.pos, "unknown type '" + std::string(base.text) + "'");
    TypePtr type = Type::get(*kind);
    if (lex_.peek().kind == Tok::LParen) {
      if (*kind != TypeKind::Tensor) {
        fail(lex_.peek().pos, "alias annotations are only allowed on Tensor types, not '" +
                                  std::string(base.text) + "'");
      }
      alias = parse_alias_annotation();
    }
    for (;;) {
      const Token& tok = lex_.peek();
      if (tok.kind == Tok::Question) {
        if (type->kind == TypeKind::Optional) fail(tok.pos, "type '" + type->str() + "' is already optional");
        lex_.next();
        type = Type::OptionalOf(type);
      } else if (tok.kind == Tok::LBracket) {
        lex_.next();
        std::optional<int64_t> size;
        if (lex_.peek().kind == Tok::Number) {
          Token num = lex_.next();
          size = parse_list_size(num);
        }
        expect(Tok::RBracket, "a list size or ']'");
        type = Type::ListOf(type, size);
      } else if (tok.kind == Tok::LParen) {
        // Only reached after a suffix (or a first annotation): `Tensor[](a)`.
        if (*kind != TypeKind::Tensor) {
          fail(tok.pos, "alias annotations are only allowed on Tensor types, not '" + type->str() + "'");
        }
        fail(tok.pos, alias ? "a type may carry only one alias annotation"
                            : "an alias annotation must directly follow 'Tensor'");
      } else {
        return type;
      }
    }
  }

  int64_t parse_list_size(const Token& num) {
    int64_t value = 0;
    for (char c : num.text) {
      if (!is_digit(c) || value > (int64_t{1} << 40)) {
        fail(num.pos, "list size must be a non-negative integer, got '" + std::string(num.text) + "'");
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  // alias := '(' sets ['!'] ['->' sets] ')'; see Note [Alias annotations].
  AliasInfo parse_alias_annotation() {
    expect(Tok::LParen, "'('");
    AliasInfo info;
    parse_alias_sets(info.before_sets);
    if (lex_.next_if(Tok::Bang)) info.is_write = true;
    if (lex_.next_if(Tok::Arrow)) parse_alias_sets(info.after_sets);
    expect(Tok::RParen, "')' to close the alias annotation");
    return info;
  }

  void parse_alias_sets(std::vector<std::string>& sets) {
    do {
      const Token& tok = lex_.peek();
      if (tok.kind != Tok::Ident && tok.kind != Tok::Star) fail(tok.pos, "expected an alias set name");
      sets.emplace_back(lex_.next().text);
    } while (lex_.next_if(Tok::Pipe));
  }

  // Parses the default of `arg` (after '='), checks it against arg.type and
  // returns its canonical text.
  std::string parse_default(const Argument& arg) {
    Literal lit = parse_literal();
    if (const Literal* bad = mismatch(*arg.type, lit)) {
      const std::string type_str = arg.type->str();
      std::string msg;
      if (bad != &lit) {
        msg = "invalid element '" + render(*bad) + "' in default value '" + render(lit) +
              "' for argument '" + arg.name + "' of type '" + type_str + "'";
      } else {
        msg = "invalid default value '" + render(lit) + "' for argument '" + arg.name + "' of type '" +
              type_str + "'";
        const Type& unopt = arg.type->is_optional() ? *arg.type->elem : *arg.type;
        if (lit.kind == Literal::Kind::None) {
          msg += " (only optional types may default to None)";
        } else if (unopt.kind == TypeKind::List && lit.kind != Literal::Kind::List &&
                   mismatch(*unopt.elem, lit) == nullptr) {
          msg += " (only a fixed-size list may default to a single value)";
        }
      }
      fail(bad->pos, msg);
    }
    return render(lit);
  }

  // default := ['-'] NUMBER | '-inf' | IDENT | STRING | '[' [default (',' default)*] ']'
  Literal parse_literal() {
    using K = Literal::Kind;
    const Token tok = lex_.peek();
    Literal lit;
    lit.pos = tok.pos;
    switch (tok.kind) {
      case Tok::Minus: {
        lex_.next();
        const Token& num = lex_.peek();
        if (num.kind == Tok::Number) {
          number_literal(lit, "-" + std::string(lex_.next().text));
        } else if (num.kind == Tok::Ident && num.text == "inf") {
          lex_.next();
          lit.kind = K::Float;
          lit.text = "-inf";
        } else {
          fail(num.pos, "expected a number after '-'");
        }
        return lit;
      }
      case Tok::Number:
        number_literal(lit, std::string(lex_.next().text));
        return lit;
      case Tok::Ident:
        lex_.next();
        lit.text = std::string(tok.text);
        if (tok.text == "True" || tok.text == "False") {
          lit.kind = K::Bool;
        } else if (tok.text == "None") {
          lit.kind = K::None;
        } else if (tok.text == "inf" || tok.text == "nan") {
          lit.kind = K::Float;
        } else {
          lit.kind = K::Ident;  // see Note [Enum-like defaults]
        }
        return lit;
      case Tok::String:
        lex_.next();
        lit.kind = K::String;
        lit.text = decode_string(tok);
        return lit;
      case Tok::LBracket:
        lex_.next();
        lit.kind = K::List;
        if (!lex_.next_if(Tok::RBracket)) {
          do {
            lit.elems.push_back(parse_literal());
          } while (lex_.next_if(Tok::Comma));
          expect(Tok::RBracket, "',' or ']' in the list default");
        }
        return lit;
      default:
        fail(tok.pos, "expected a default value");
    }
  }

  void number_literal(Literal& lit, std::string text) {
    const bool is_float = text.find_first_of(".eE") != std::string::npos;
    if (!is_float) {
      errno = 0;
      (void)std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(lit.pos, "integer default '" + text + "' is out of range");
    }
    lit.kind = is_float ? Literal::Kind::Float : Literal::Kind::Int;
    lit.text = std::move(text);
  }

  // Decodes a quoted string token (either quote style; escapes \\ \' \" \n \t \r).
  std::string decode_string(const Token& tok) {
    std::string out;
    const std::string_view body = tok.text.substr(1, tok.text.size() - 2);
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] != '\\') {
        out += body[i];
        continue;
      }
      const char e = body[++i];  // the lexer guarantees a character follows '\'
      switch (e) {
        case '\\': case '\'': case '"': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        default:
          fail(tok.pos + 1 + i - 1, std::string("invalid escape sequence '\\") + e + "' in string literal");
      }
    }
    return out;
  }

  Reporter rep_;
  Lexer lex_;
};

}  // namespace

FunctionSchema parse_schema(std::string_view text) { return Parser(text, "schema").parse_schema(); }

std::tuple<std::string, std::string, std::string> parse_operator_name(std::string_view text) {
  return Parser(text, "operator name").parse_name_only();
}

}  // namespace sdk
