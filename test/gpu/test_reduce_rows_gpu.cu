// Device tensors: the reduction cases evaluated by the reduction and row kernels on the GPU.
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

// Part 2 of the cases (row functions, placements, tie/pack, overlaps); part 1 is in
// test_reduce_gpu.cu.
#define CUFUSE_REDUCE_PART 2
using space = cufuse::device_space;
#include "../cases/reduce.inl"
