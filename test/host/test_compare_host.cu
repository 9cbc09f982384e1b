// Host tensors: the compare cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

using space = cufuse::host_space;
#include "../cases/compare.inl"
