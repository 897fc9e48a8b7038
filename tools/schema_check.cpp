// Scratch driver for the schema parser (not part of the build):
//   g++ -std=c++17 -O0 -g -Icsrc csrc/core/Exception.cpp csrc/dispatch/FunctionSchema.cpp
//       tools/schema_check.cpp -o /tmp/schema_check
//   /tmp/schema_check 'aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor'
// Prints the canonical form and the parsed fields, or the error message.
#include <iostream>

#include "core/Exception.h"
#include "dispatch/FunctionSchema.h"

int main(int argc, char** argv) {
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    try {
      sdk::FunctionSchema s = sdk::parse_schema(argv[i]);
      std::cout << s.str() << "\n";
      std::cout << "  qualified_name=" << s.qualified_name() << " mutable=" << s.is_mutable()
                << " out_fn=" << s.is_out_fn() << " inplace=" << s.is_inplace()
                << " positional=" << s.num_positional() << "\n";
      for (const auto& a : s.arguments) {
        std::cout << "  arg  " << a.str() << "  [type=" << a.type->str()
                  << " default=" << a.default_text.value_or("<none>") << " kwarg_only=" << a.kwarg_only
                  << " alias=" << (a.alias_info ? a.alias_info->str() : "<none>") << "]\n";
      }
      for (const auto& r : s.returns) std::cout << "  ret  " << r.str() << "\n";
      if (sdk::parse_schema(s.str()).str() != s.str()) {
        std::cout << "  ROUND TRIP MISMATCH\n";
        rc = 1;
      }
    } catch (const sdk::Error& e) {
      std::cout << "error(kind=" << static_cast<int>(e.kind()) << "): " << e.what() << "\n";
    }
  }
  return rc;
}
