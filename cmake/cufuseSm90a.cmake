# cufuse_sm90a(<target>): compile <target>'s CUDA code for sm_90a (Hopper's architecture-specific
# target). A file that calls cufuse::gemm with an epilogue expression instantiates the GEMM
# kernels for it there; their wgmma configurations need sm_90a code (a build for sm_90 alone
# runs the other configurations). In a PTX-only build (CUDA_ARCHITECTURES 90-virtual) it emits
# compute_90a PTX instead.
function(cufuse_sm90a target)
  get_target_property(archs ${target} CUDA_ARCHITECTURES)
  if("90-virtual" IN_LIST archs OR "90-virtual" IN_LIST CMAKE_CUDA_ARCHITECTURES)
    set(gencode -gencode=arch=compute_90a,code=compute_90a)
  else()
    set(gencode -gencode=arch=compute_90a,code=sm_90a)
  endif()
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${gencode}>)
endfunction()
