// Must NOT compile: a view of const elements is not an assignment target.
#include <cufuse/cufuse.cuh>

void misuse(const cufuse::tensor<float, 2>& x) { cufuse::slice(x, 0, cufuse::all) = 1.0f; }
