// libFuzzer harness for the schema parser (csrc/backend_sdk/dispatch/FunctionSchema.cpp); built and run by
// tests/fuzz/run.py (target schema_cpp) with clang's -fsanitize=fuzzer,address,undefined.
//
// Oracle: parse_schema either returns or throws sdk::Error of kind Value (Note [Schema parse
// errors]) whose message starts "Invalid schema '"; anything else is a finding (another exception,
// a crash, a sanitizer report, a hang). A schema that parses prints as canonical text that parses
// back to an equal schema printing the same text (the round trip FunctionSchema.h promises).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/FunctionSchema.h>

namespace {
[[noreturn]] void finding(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "schema_fuzzer: %s\n  input: '%.*s'\n  %s\n", what, static_cast<int>(input.size()),
               input.data(), detail.c_str());
  std::abort();
}

std::string canonical(const sdk::FunctionSchema& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sdk::FunctionSchema schema;
  try {
    schema = sdk::parse_schema(text);
  } catch (const sdk::Error& e) {
    if (e.kind() != sdk::ErrorKind::Value) finding("parse error of a kind other than Value", text, e.what());
    if (std::string_view(e.what()).rfind("Invalid schema '", 0) != 0) finding("unexpected error text", text, e.what());
    return 0;
  } catch (const std::exception& e) {
    finding("exception other than sdk::Error", text, e.what());
  }
  std::string printed = canonical(schema);
  try {
    sdk::FunctionSchema again = sdk::parse_schema(printed);
    if (!(again == schema)) finding("round trip changed the schema", text, "printed: " + printed);
    if (canonical(again) != printed) finding("round trip changed the text", text, printed + " -> " + canonical(again));
  } catch (const std::exception& e) {
    finding("canonical text does not parse", text, "printed: " + printed + "\n  error: " + e.what());
  }
  // The name parser on the same text: Value errors only.
  try {
    (void)sdk::parse_operator_name(text);
  } catch (const sdk::Error& e) {
    if (e.kind() != sdk::ErrorKind::Value) finding("parse_operator_name: error kind other than Value", text, e.what());
  } catch (const std::exception& e) {
    finding("parse_operator_name: exception other than sdk::Error", text, e.what());
  }
  return 0;
}
