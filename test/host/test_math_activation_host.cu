// Host tensors: the math_activation cases evaluated on the CPU (this runs in CI).
#include "../support/harness.cuh"

using space = cufuse::host_space;
#include "../cases/math_activation.inl"
