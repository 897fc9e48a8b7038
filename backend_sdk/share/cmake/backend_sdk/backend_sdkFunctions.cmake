# backend_sdk_add_backend: a vendor backend (or operator) library in one call.
#
#   backend_sdk_add_backend(NAME [SOURCES] src... [DEVICE_SIM] [INSTALL_DESTINATION dir] [NO_INSTALL])
#
# Makes the shared library libNAME.so from the sources, compiled as C++17 with -O2 (unless a Debug
# build), position-independent, linked to backend_sdk::backend_sdk (and to backend_sdk::device_sim
# with DEVICE_SIM, for kernels that run on the simulated device), with an RPATH that finds the SDK
# installed next to it in site-packages ($ORIGIN/../backend_sdk/lib, $ORIGIN/../device_sim) and, for
# an imported SDK, where it was found. Installs it into INSTALL_DESTINATION (default: NAME, i.e.
# site-packages/NAME/ in a scikit-build-core wheel) unless NO_INSTALL.
#
# Included by backend_sdkConfig.cmake (installed SDK) and by the SDK's own CMakeLists.txt (in-tree
# samples), so both build vendor code the same way.
include_guard(GLOBAL)

function(backend_sdk_add_backend name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "DEVICE_SIM;NO_INSTALL" "INSTALL_DESTINATION" "SOURCES")
  set(sources ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "backend_sdk_add_backend(${name}): no SOURCES given")
  endif()
  if(NOT TARGET backend_sdk::backend_sdk)
    message(FATAL_ERROR "backend_sdk_add_backend(${name}): find_package(backend_sdk CONFIG REQUIRED) first")
  endif()
  if(ARG_DEVICE_SIM AND NOT TARGET backend_sdk::device_sim)
    message(FATAL_ERROR "backend_sdk_add_backend(${name} DEVICE_SIM): the SDK has no device_sim library")
  endif()

  add_library(${name} SHARED ${sources})
  set_target_properties(${name} PROPERTIES
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${name} PRIVATE $<$<NOT:$<CONFIG:Debug>>:-O2> -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE backend_sdk::backend_sdk)
  if(ARG_DEVICE_SIM)
    target_link_libraries(${name} PRIVATE backend_sdk::device_sim)
  endif()

  set(rpath "$ORIGIN/../backend_sdk/lib" "$ORIGIN/../device_sim")
  get_target_property(sdk_imported backend_sdk::backend_sdk IMPORTED)
  if(sdk_imported)
    list(APPEND rpath "${backend_sdk_LIBRARY_DIR}")
    if(ARG_DEVICE_SIM)
      list(APPEND rpath "${backend_sdk_DEVICE_SIM_LIBRARY_DIR}")
    endif()
  endif()
  set_target_properties(${name} PROPERTIES INSTALL_RPATH "${rpath}" BUILD_WITH_INSTALL_RPATH ON)

  if(NOT ARG_NO_INSTALL)
    if(NOT ARG_INSTALL_DESTINATION)
      set(ARG_INSTALL_DESTINATION "${name}")
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION "${ARG_INSTALL_DESTINATION}")
  endif()
endfunction()
