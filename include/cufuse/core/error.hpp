/// \file Exception types and the checks that raise them. Usage errors throw on the host;
/// device code never throws.
#pragma once

#include "config.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace cufuse {

/// Base of every exception cufuse throws.
class error : public std::runtime_error {
public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

/// Operands or destination of incompatible shapes; the message names both shapes.
class shape_error : public error {
public:
  explicit shape_error(const std::string& what) : error(what) {}
};

/// A CUDA runtime call failed; carries the code, the call and where it was made.
class cuda_error : public error {
public:
  cuda_error(cudaError_t code, const std::string& call, const char* file, int line,
             const std::string& detail = {})
      : error(format(code, call, file, line, detail)), code_(code), call_(call), file_(file),
        line_(line) {}

  /// The CUDA error code.
  cudaError_t code() const noexcept { return code_; }
  /// The call (or launch) that failed, as written in the source.
  const std::string& call() const noexcept { return call_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

  /// True for the codes that mean "there is no usable GPU here".
  static bool is_no_device(cudaError_t code) noexcept {
    return code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver ||
           code == cudaErrorDevicesUnavailable || code == cudaErrorInvalidDevice;
  }

private:
  static std::string format(cudaError_t code, const std::string& call, const char* file, int line,
                            const std::string& detail) {
    std::string msg = "cufuse: ";
    if (is_no_device(code)) {
      msg += "no usable CUDA device (device tensors need a GPU; host_tensor runs on the CPU): ";
    }
    msg += std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ") in " + call;
    if (!detail.empty()) {
      msg += " [" + detail + "]";
    }
    msg += " at " + std::string(file) + ":" + std::to_string(line);
    if (code == cudaErrorIllegalAddress || code == cudaErrorLaunchFailure ||
        code == cudaErrorMisalignedAddress || code == cudaErrorIllegalInstruction) {
      msg += "; the CUDA context is now unusable (sticky error): restart the process";
    }
    return msg;
  }

  cudaError_t code_;
  std::string call_;
  const char* file_;
  int line_;
};

namespace detail {
[[noreturn]] inline void throw_cuda(cudaError_t code, const char* call, const char* file, int line,
                                    const std::string& detail = {}) {
  // Clear a non-sticky error so that later, unrelated calls do not report it again.
  (void)cudaGetLastError();
  throw cuda_error(code, call, file, line, detail);
}
} // namespace detail
} // namespace cufuse

/// Checks a CUDA runtime call; throws cufuse::cuda_error naming the call, file and line.
#define CUFUSE_CUDA_CHECK(call)                                                                    \
  do {                                                                                             \
    const cudaError_t cufuse_err_ = (call);                                                        \
    if (cufuse_err_ != cudaSuccess) {                                                              \
      ::cufuse::detail::throw_cuda(cufuse_err_, #call, __FILE__, __LINE__);                        \
    }                                                                                              \
  } while (0)

/// Like CUFUSE_CUDA_CHECK, with extra context (a std::string) appended to the message.
#define CUFUSE_CUDA_CHECK_MSG(call, detail_string)                                                 \
  do {                                                                                             \
    const cudaError_t cufuse_err_ = (call);                                                        \
    if (cufuse_err_ != cudaSuccess) {                                                              \
      ::cufuse::detail::throw_cuda(cufuse_err_, #call, __FILE__, __LINE__, (detail_string));       \
    }                                                                                              \
  } while (0)
