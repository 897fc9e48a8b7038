// sdk::Error and the SDK_CHECK macros: header-only, defined in
// <backend_sdk/headeronly/Exception.h> (Note [Error kinds] is there).
#pragma once

#include <backend_sdk/headeronly/Exception.h>
