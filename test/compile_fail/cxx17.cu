// Must NOT compile: cufuse needs C++20 (nvcc defaults to C++17); one #error says so.
#include <cufuse/cufuse.cuh>
