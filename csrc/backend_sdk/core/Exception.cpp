#include <backend_sdk/core/Exception.h>

namespace sdk::detail {

void throw_error(ErrorKind kind, const char* condition, std::string msg) {
  if (msg.empty()) {
    msg = std::string("Expected ") + condition + " to be true, but got false.";
  }
  throw Error(kind, std::move(msg));
}

}  // namespace sdk::detail
