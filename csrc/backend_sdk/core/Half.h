// float16 and bfloat16: header-only, defined in <backend_sdk/headeronly/Half.h>.
#pragma once

#include <backend_sdk/headeronly/Half.h>
