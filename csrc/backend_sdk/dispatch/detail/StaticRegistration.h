// Recording registration errors raised during static initialisation (Library.h's
// take_static_registration_errors reads them): used by SDK_LIBRARY blocks and by the stable
// shim's sdk_stable_report_registration_error (STABLE_SDK_LIBRARY blocks).
#pragma once

#include <string>

#include <backend_sdk/core/Macros.h>

namespace sdk::detail {

// Prints the error to stderr and keeps it for take_static_registration_errors().
void record_static_registration_error(std::string msg);

}  // namespace sdk::detail
