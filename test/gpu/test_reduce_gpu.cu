// Device tensors: the reduction cases evaluated by the reduction and row kernels on the GPU.
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

// Part 1 of the cases (every reducer, dtype and axis form); test_reduce_rows_gpu.cu has part 2.
#define CUFUSE_REDUCE_PART 1
using space = cufuse::device_space;
#include "../cases/reduce.inl"
