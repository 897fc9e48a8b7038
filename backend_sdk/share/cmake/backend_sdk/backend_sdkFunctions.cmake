# backend_sdk_add_backend: a vendor backend (or operator) library in one call.
#
#   backend_sdk_add_backend(NAME [SOURCES] src... [DEVICE_SIM] [STABLE] [INSTALL_DESTINATION dir] [NO_INSTALL])
#
# Makes the shared library libNAME.so from the sources, compiled as C++17 with -O2 (unless a Debug
# build), position-independent, linked to backend_sdk::backend_sdk (and to backend_sdk::device_sim
# with DEVICE_SIM, for kernels that run on the simulated device), with an RPATH that finds the SDK
# installed next to it in site-packages ($ORIGIN/../backend_sdk/lib, $ORIGIN/../device_sim) and, for
# an imported SDK, where it was found. Installs it into INSTALL_DESTINATION (default: NAME, i.e.
# site-packages/NAME/ in a scikit-build-core wheel) unless NO_INSTALL.
#
# STABLE: a library built only on the ABI-stable surface (docs/architecture.md, "The ABI-stable
# surface"). Its include path holds only <backend_sdk/stable/...>, <backend_sdk/headeronly/...> and
# the C device contract <backend_sdk/runtime/DeviceApi.h> with its extension headers (links in the build directory, so that
# including any other SDK header fails to compile), it is compiled with hidden visibility, and it
# links libbackend_sdk.so for the C shim without the C++ target's usage requirements; after the
# link, a check (nm) fails the build if the library uses a symbol of libbackend_sdk other than the
# C shim's sdk_stable_* functions. Such a binary keeps working when the SDK's C++ ABI changes.
#
# Included by backend_sdkConfig.cmake (installed SDK) and by the SDK's own CMakeLists.txt (in-tree
# samples), so both build vendor code the same way.
include_guard(GLOBAL)
set(_BACKEND_SDK_FUNCTIONS_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(backend_sdk_add_backend name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "DEVICE_SIM;NO_INSTALL;STABLE" "INSTALL_DESTINATION" "SOURCES")
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
  # A vendor project that chose no build type would compile its kernels unoptimised: -O2 then. A chosen
  # build type's own flags (Debug, Release, RelWithDebInfo, MinSizeRel) are left alone.
  target_compile_options(${name} PRIVATE $<$<STREQUAL:$<CONFIG>,>:-O2> -Wall -Wextra -Wno-unused-parameter)
  if(ARG_STABLE)
    _backend_sdk_stable_link(${name} ${ARG_DEVICE_SIM})
  else()
    target_link_libraries(${name} PRIVATE backend_sdk::backend_sdk)
    if(ARG_DEVICE_SIM)
      target_link_libraries(${name} PRIVATE backend_sdk::device_sim)
    endif()
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

# STABLE (see above): the restricted include directory, the shim-only link and its check.
function(_backend_sdk_stable_link name device_sim)
  get_target_property(includes backend_sdk::backend_sdk INTERFACE_INCLUDE_DIRECTORIES)
  set(root "")
  foreach(dir IN LISTS includes)
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dir "${dir}")  # the SDK's own build tree
    if(EXISTS "${dir}/backend_sdk/stable/c/shim.h")
      set(root "${dir}")
    endif()
  endforeach()
  if(NOT root)
    message(FATAL_ERROR "backend_sdk_add_backend(${name} STABLE): the SDK's headers have no backend_sdk/stable/c/shim.h")
  endif()
  set(inc "${CMAKE_CURRENT_BINARY_DIR}/${name}_stable_include")
  file(MAKE_DIRECTORY "${inc}/backend_sdk/runtime")
  # The device contract and its extension structs are C (each includes only DeviceApi.h).
  foreach(entry stable headeronly runtime/DeviceApi.h runtime/DeviceTraceExtension.h runtime/DeviceGraphExtension.h
                runtime/DeviceStatsExtension.h runtime/DeviceCollectivesExtension.h)
    if(NOT EXISTS "${inc}/backend_sdk/${entry}")
      file(CREATE_LINK "${root}/backend_sdk/${entry}" "${inc}/backend_sdk/${entry}" SYMBOLIC)
    endif()
  endforeach()
  target_include_directories(${name} PRIVATE "${inc}")
  target_compile_options(${name} PRIVATE -fvisibility=hidden -fvisibility-inlines-hidden)
  target_link_libraries(${name} PRIVATE "$<TARGET_FILE:backend_sdk::backend_sdk>")
  if(device_sim)
    # The simulator's header is C (device_sim.h and the device contract): no SDK C++ either.
    get_target_property(sim_includes backend_sdk::device_sim INTERFACE_INCLUDE_DIRECTORIES)
    foreach(dir IN LISTS sim_includes)
      string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dir "${dir}")
      if(EXISTS "${dir}/device_sim.h")
        target_include_directories(${name} PRIVATE "${dir}")
      endif()
    endforeach()
    target_link_libraries(${name} PRIVATE "$<TARGET_FILE:backend_sdk::device_sim>")
  endif()
  find_program(BACKEND_SDK_NM nm)
  if(BACKEND_SDK_NM)
    add_custom_command(TARGET ${name} POST_BUILD
      COMMAND "${CMAKE_COMMAND}" -DLIBRARY=$<TARGET_FILE:${name}> -DSDK=$<TARGET_FILE:backend_sdk::backend_sdk>
              -DNM=${BACKEND_SDK_NM} -P "${_BACKEND_SDK_FUNCTIONS_DIR}/backend_sdkStableCheck.cmake"
      VERBATIM)
  endif()
endfunction()
