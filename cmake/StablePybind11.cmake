# pybind11 from a stable location (docs/architecture.md, "Building").
#
# Every isolated `pip install` gets pybind11 in a new temporary environment. Compiled against
# that directory, _C's objects would change command line and header paths with each install and
# all of _C would recompile. Under scikit-build-core the pybind11 package is therefore copied
# once per pybind11 version into the build directory and found there: the next install, in
# another environment but with the same pybind11, compiles against the same paths and mtimes.
# A plain CMake build uses pybind11 where it is (pybind11_DIR, or found as usual).
if(DEFINED SKBUILD AND NOT DEFINED pybind11_DIR)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import os, pybind11; print(os.path.dirname(pybind11.__file__)); print(pybind11.__version__)"
    OUTPUT_VARIABLE _sdk_pybind11 OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _sdk_pybind11_rc)
  if(_sdk_pybind11_rc EQUAL 0)
    string(REPLACE "\n" ";" _sdk_pybind11 "${_sdk_pybind11}")
    list(GET _sdk_pybind11 0 _sdk_pybind11_src)
    list(GET _sdk_pybind11 1 _sdk_pybind11_version)
    set(_sdk_pybind11_dst "${CMAKE_CURRENT_BINARY_DIR}/pybind11-${_sdk_pybind11_version}")
    if(NOT EXISTS "${_sdk_pybind11_dst}/share/cmake/pybind11/pybind11Config.cmake")
      file(COPY "${_sdk_pybind11_src}/include" "${_sdk_pybind11_src}/share" DESTINATION "${_sdk_pybind11_dst}")
    endif()
    find_package(pybind11 CONFIG REQUIRED PATHS "${_sdk_pybind11_dst}/share/cmake/pybind11" NO_DEFAULT_PATH)
  endif()
endif()
if(NOT pybind11_FOUND)
  find_package(pybind11 CONFIG REQUIRED)
endif()
