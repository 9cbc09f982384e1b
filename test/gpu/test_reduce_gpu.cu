// Device tensors: the reduction cases evaluated by the reduction and row kernels on the GPU.
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

using space = cufuse::device_space;
#include "../cases/reduce.inl"
