# SPDX-License-Identifier: MIT
# Builds the cffi extension futoin_asyncsteps._native; where the library is
# found is set by environment variables (futoin_asyncsteps/_build.py,
# docs/PYTHON.md). Offline, with Debian's setuptools and cffi:
#   FUTOIN_BUILD_DIR=build python3 setup.py build_ext --inplace
#   python3 -m pip install --no-build-isolation --no-deps ./bindings/python
from setuptools import setup

setup(
    name="futoin_asyncsteps",
    version="0.1.0",
    description="FutoIn AsyncSteps for Python (cffi binding of futoin_asyncsteps)",
    license="MIT",
    packages=["futoin_asyncsteps"],
    python_requires=">=3.11",
    setup_requires=["cffi>=1.15"],
    install_requires=["cffi>=1.15"],
    cffi_modules=["futoin_asyncsteps/_build.py:ffibuilder"],
    zip_safe=False,
)
