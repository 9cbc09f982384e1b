// Host tensors: the reduction cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

#include <array>
#include <cmath>
#include <limits>

// Part 2 of the cases (row functions, placements, tie/pack, overlaps); part 1 is in
// test_reduce_host.cu.
#define CUFUSE_REDUCE_PART 2
using space = cufuse::host_space;
#include "../cases/reduce.inl"
