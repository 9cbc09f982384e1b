// Device tensors: the N-d shape cases evaluated by the fused kernels on the GPU.
#include "../support/harness.cuh"

#include <array>

using space = cufuse::device_space;
#include "../cases/shapes.inl"
