// Host tensors: the math_other cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

using space = cufuse::host_space;
#include "../cases/math_other.inl"
