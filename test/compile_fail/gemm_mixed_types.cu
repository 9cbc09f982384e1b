// Must NOT compile: A and B of different element types. CTest checks for the one readable error.
#include <cufuse/gemm.cuh>

void misuse(cufuse::tensor<float, 2>& a, cufuse::tensor<__half, 2>& b,
            cufuse::tensor<float, 2>& c) {
  cufuse::gemm(a, b, c);
}
