// GEMM epilogues from expressions, part 3: activations and batches (test/cases/gemm_epilogue.inl).
#define CUFUSE_EPI_PART 3
#include "../cases/gemm_epilogue.inl"
