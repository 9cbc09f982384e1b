// Host tensors: the reduction cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

using space = cufuse::host_space;
#include "../cases/reduce.inl"
