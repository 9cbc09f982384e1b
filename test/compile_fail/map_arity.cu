// Must NOT compile: the functor takes two arguments, map gives it one operand.
#include <cufuse/cufuse.cuh>

void misuse(cufuse::tensor<float, 1>& x, cufuse::tensor<float, 1>& y) {
  y = cufuse::map([] __host__ __device__(float a, float b) { return a + b; }, x);
}
