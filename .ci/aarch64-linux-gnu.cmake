# .ci/aarch64-linux-gnu.cmake — a CMake toolchain for an arm64 build on an x86-64 Debian machine:
# Debian's cross g++ (g++-aarch64-linux-gnu), the arm64 packages of BLIS and GoogleTest
# (dpkg --add-architecture arm64; libblis-dev:arm64 libgtest-dev:arm64), and qemu-aarch64 to run
# what it builds (gtest_discover_tests and ctest run the test binary through it). Run a program as
# `qemu-aarch64 build-arm64/examples/train_gpt`, with Debian's arm64 libc (libc6:arm64), not with
# -L /usr/aarch64-linux-gnu: mixed with it, the first thread started hangs (.ci/arm64 says why).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)  # /usr/lib/aarch64-linux-gnu, /usr/include/aarch64-linux-gnu
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Libraries and headers of arm64 only; programs (cmake, python) of the machine itself.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
