#include <backend_sdk/ops/detail/BackendSelect.h>

#include <backend_sdk/core/Exception.h>

namespace sdk::ops {

DispatchKeySet backend_select_keys(std::optional<Device> device) {
  DeviceType type = device ? device->type : DeviceType::CPU;
  LocalDispatchKeySet tls = tls_local_dispatch_key_set();
  DispatchKeySet ks = (DispatchKeySet(dense_key_for(type)) | tls.included) - tls.excluded;
  return ks & keys_after(DispatchKey::BackendSelect);
}

void backend_select_boxed(OperatorKernel*, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  std::optional<size_t> index = schema.argument_index("device");
  SDK_CHECK_VALUE(index.has_value(), op.name(),
                  ": the BackendSelect kernel needs a 'device' argument in the schema ", schema.str());
  SDK_CHECK(stack->size() >= schema.arguments.size(), op.name(), ": BackendSelect: the stack holds ",
            stack->size(), " values but the schema has ", schema.arguments.size(), " arguments");
  const IValue& arg = (*stack)[stack->size() - schema.arguments.size() + *index];
  std::optional<Device> device;
  if (arg.is_device()) {
    device = arg.to_device();
  } else {
    SDK_CHECK_TYPE(arg.is_none(), op.name(), ": argument 'device' must be a Device or None, not ", arg.tag_name());
  }
  op.redispatch_boxed(backend_select_keys(device), stack);
}

}  // namespace sdk::ops
