// Host tensors: the N-d shape cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

#include <array>

using space = cufuse::host_space;
#include "../cases/shapes.inl"
