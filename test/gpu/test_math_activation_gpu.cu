// Device tensors: the math_activation cases evaluated by the fused kernel on the GPU.
#include "../support/harness.cuh"

using space = cufuse::device_space;
#include "../cases/math_activation.inl"
