// The SDK's face of the "sdk.collectives" extension (Note [Device collectives
// extension]): the attach-time check and the lookup the bindings use.
#include <cstring>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/detail/DeviceCollectives.h>

namespace sdk::runtime {

bool has_device_collectives(DeviceType type) {
  return has_device(type) && find_device_extension(type, SDK_COLLECTIVES_EXTENSION_NAME) != nullptr;
}

const sdk_collectives_extension& device_collectives(DeviceType type, const char* what) {
  (void)device_api(type);  // RuntimeError if no device
  const auto* ext = find_device_extension(type, SDK_COLLECTIVES_EXTENSION_NAME);
  SDK_CHECK_NOT_IMPLEMENTED(ext != nullptr, what, ": the device of backend '", device_type_name(type), "' (",
                            device_source(type), ") does not implement device collectives (the '",
                            SDK_COLLECTIVES_EXTENSION_NAME, "' extension, Note [Device collectives extension])");
  return *reinterpret_cast<const sdk_collectives_extension*>(ext);  // size checked at attach
}

namespace detail {

void validate_collectives_extension(const sdk_device_extension_base* e, const std::string& source) {
  SDK_CHECK_VALUE(e->struct_size >= SDK_COLLECTIVES_EXTENSION_SIZE_1, "attach_device: extension '",
                  SDK_COLLECTIVES_EXTENSION_NAME, "' of '", source, "' declares struct_size ", e->struct_size,
                  ", smaller than the ", SDK_COLLECTIVES_EXTENSION_SIZE_1, " bytes of its version 1");
  const auto* c = reinterpret_cast<const sdk_collectives_extension*>(e);
  SDK_CHECK_VALUE(c->get_unique_id && c->comm_init_rank && c->comm_destroy && c->all_reduce && c->all_gather &&
                      c->reduce_scatter && c->broadcast && c->send && c->recv,
                  "attach_device: extension '", SDK_COLLECTIVES_EXTENSION_NAME, "' of '", source,
                  "' leaves one of its functions NULL");
  const char* name = c->backend_name;
  size_t len = name ? strnlen(name, 64) : 0;
  bool ok = len > 0 && len < 64;
  for (size_t i = 0; ok && i < len; ++i)
    ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
  SDK_CHECK_VALUE(ok, "attach_device: extension '", SDK_COLLECTIVES_EXTENSION_NAME, "' of '", source,
                  "' has a NULL, empty, over-long or not lower-case backend_name");
}

}  // namespace detail
}  // namespace sdk::runtime
