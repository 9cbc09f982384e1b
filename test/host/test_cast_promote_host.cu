// Host tensors: the cast_promote cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

using space = cufuse::host_space;
#include "../cases/cast_promote.inl"
