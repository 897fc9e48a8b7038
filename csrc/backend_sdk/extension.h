// The SDK's C++ API in one include, as <torch/extension.h> is PyTorch's:
// tensors, the aten operator functions, registration (SDK_LIBRARY*), errors,
// and the device runtime (guards, streams, events, the device contract).
// A kernel file that wants to compile fastest includes only the headers it uses.
#pragma once

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/ScalarType.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Operators.h>
#include <backend_sdk/ops/LinearAlgebra.h>
#include <backend_sdk/runtime/DeviceApi.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/Tensor.h>
