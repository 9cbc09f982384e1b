// GEMM epilogues from expressions, part 2: fp16 and fp32 (TF32 and SIMT), every configuration
// (test/cases/gemm_epilogue.inl).
#define CUFUSE_EPI_PART 2
#include "../cases/gemm_epilogue.inl"
