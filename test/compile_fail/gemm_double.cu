// Must NOT compile: double GEMM is not provided. CTest checks for the one readable error.
#include <cufuse/gemm.cuh>

void misuse(cufuse::tensor<double, 2>& a, cufuse::tensor<double, 2>& b,
            cufuse::tensor<double, 2>& c) {
  cufuse::gemm(a, b, c);
}
