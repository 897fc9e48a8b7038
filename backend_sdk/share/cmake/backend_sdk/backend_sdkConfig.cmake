# backend_sdk's CMake package:
#
#   find_package(backend_sdk CONFIG REQUIRED)
#   backend_sdk_add_backend(my_backend SOURCES csrc/Kernels.cpp csrc/Device.cpp DEVICE_SIM)
#
# Found through the installed Python package: scikit-build-core projects find it by the
# `cmake.root` entry point; plain CMake with
#   -DCMAKE_PREFIX_PATH=$(python -c "import backend_sdk; print(backend_sdk.cmake_prefix_path)")
# The file lives inside the backend_sdk Python package (backend_sdk/share/cmake/backend_sdk/), so
# the same file serves an installed wheel (site-packages/backend_sdk) and a development checkout
# built with SDK_INPLACE=ON (headers then come from the checkout's csrc/).
#
# Imported targets:
#   backend_sdk::backend_sdk  the SDK's headers and libbackend_sdk.so (C++17)
#   backend_sdk::device_sim   the simulated device's header and libdevice_sim.so
# Variables: backend_sdk_INCLUDE_DIRS, backend_sdk_LIBRARY_DIR, backend_sdk_DEVICE_SIM_LIBRARY_DIR,
#   backend_sdk_PACKAGE_DIR (the Python package), backend_sdk_VERSION.
# Function: backend_sdk_add_backend (backend_sdkFunctions.cmake).
cmake_minimum_required(VERSION 3.18)
include(CMakeFindDependencyMacro)
find_dependency(Threads)

get_filename_component(backend_sdk_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
get_filename_component(_backend_sdk_parent "${backend_sdk_PACKAGE_DIR}/.." ABSOLUTE)

if(EXISTS "${backend_sdk_PACKAGE_DIR}/include/backend_sdk/dispatch/Library.h")
  set(backend_sdk_INCLUDE_DIRS "${backend_sdk_PACKAGE_DIR}/include")            # installed wheel
elseif(EXISTS "${_backend_sdk_parent}/csrc/backend_sdk/dispatch/Library.h")
  set(backend_sdk_INCLUDE_DIRS "${_backend_sdk_parent}/csrc")                   # development checkout
else()
  set(backend_sdk_FOUND FALSE)
  set(backend_sdk_NOT_FOUND_MESSAGE "backend_sdk: no headers next to ${CMAKE_CURRENT_LIST_FILE}")
  return()
endif()
set(backend_sdk_LIBRARY_DIR "${backend_sdk_PACKAGE_DIR}/lib")
if(NOT EXISTS "${backend_sdk_LIBRARY_DIR}/libbackend_sdk.so")
  set(backend_sdk_FOUND FALSE)
  set(backend_sdk_NOT_FOUND_MESSAGE
      "backend_sdk: ${backend_sdk_LIBRARY_DIR}/libbackend_sdk.so is missing (in a checkout, build the SDK first)")
  return()
endif()

if(NOT TARGET backend_sdk::backend_sdk)
  add_library(backend_sdk::backend_sdk SHARED IMPORTED)
  set_target_properties(backend_sdk::backend_sdk PROPERTIES
    IMPORTED_LOCATION "${backend_sdk_LIBRARY_DIR}/libbackend_sdk.so"
    IMPORTED_SONAME "libbackend_sdk.so"
    INTERFACE_INCLUDE_DIRECTORIES "${backend_sdk_INCLUDE_DIRS}"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
endif()

set(backend_sdk_DEVICE_SIM_LIBRARY_DIR "${_backend_sdk_parent}/device_sim")
if(NOT TARGET backend_sdk::device_sim AND EXISTS "${backend_sdk_DEVICE_SIM_LIBRARY_DIR}/libdevice_sim.so")
  add_library(backend_sdk::device_sim SHARED IMPORTED)
  set_target_properties(backend_sdk::device_sim PROPERTIES
    IMPORTED_LOCATION "${backend_sdk_DEVICE_SIM_LIBRARY_DIR}/libdevice_sim.so"
    IMPORTED_SONAME "libdevice_sim.so"
    INTERFACE_INCLUDE_DIRECTORIES "${backend_sdk_DEVICE_SIM_LIBRARY_DIR}/include;${backend_sdk_INCLUDE_DIRS}")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/backend_sdkFunctions.cmake")
unset(_backend_sdk_parent)
