// Device tensors: the math_other cases evaluated by the fused kernel on the GPU.
#include "../support/harness.cuh"

using space = cufuse::device_space;
#include "../cases/math_other.inl"
