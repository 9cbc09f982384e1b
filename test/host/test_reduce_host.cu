// Host tensors: the reduction cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

// Part 1 of the cases (every reducer, dtype and axis form); test_reduce_rows_host.cu has part 2.
#define CUFUSE_REDUCE_PART 1
using space = cufuse::host_space;
#include "../cases/reduce.inl"
