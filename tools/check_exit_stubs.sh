#!/usr/bin/env bash
# Fails if the objects of the given static libraries call exit(). libcufuse calls it nowhere,
# but nvcc (seen with CUDA 13.0) compiles a host function template whose instantiation calls
# device-only code (a __device__ member function, say) without a diagnostic and with its body
# replaced by exit(1): a GEMM call then ended the program silently (bench/JOURNAL.md t12).
#   bash tools/check_exit_stubs.sh build/src/libcufuse.a
set -euo pipefail
found=$(objdump -dr --no-show-raw-insn "$@" |
  awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /R_X86_64_PLT32[[:space:]]+exit-/ { print fn }' | sort -u)
if [ -n "$found" ]; then
  echo "functions that call exit() (nvcc's stubs for host code that calls device code):"
  echo "$found" | tr -d '<>:' | c++filt | cut -c1-240
  exit 1
fi
echo "no calls to exit() in $*"
