"""The setuptools sample: a C++ extension built against backend_sdk, as a PyTorch extension is.

    python setup.py build_ext --inplace      # or: pip install --no-build-isolation .
    python -c "import backend_sdk, setuptools_ext; ..."

``CppExtension`` adds the SDK's include and library directories, ``-lbackend_sdk`` and an RPATH to
the SDK's library; ``BuildExtension`` adds ``-std=c++17`` and ``-DSDK_EXTENSION_NAME`` and compiles
with ninja when it is installed. Import ``backend_sdk`` before the extension.
"""
from setuptools import setup

from backend_sdk.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="setuptools_ext",
    version="0.1.0",
    ext_modules=[CppExtension("setuptools_ext", ["csrc/setuptools_ext.cpp"], extra_compile_args={"cxx": ["-O2"]})],
    cmdclass={"build_ext": BuildExtension},
)
