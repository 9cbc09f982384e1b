// GEMM epilogues from expressions, part 1: bf16 (every configuration), aux outputs, reading Y,
// errors, graph count (test/cases/gemm_epilogue.inl).
#define CUFUSE_EPI_PART 1
#include "../cases/gemm_epilogue.inl"
