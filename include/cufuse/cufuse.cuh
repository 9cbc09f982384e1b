/// \file The whole fusion library: tensors, expressions, evaluation.
///
///   cufuse::tensor<float, 1> A(n), B(n), C(n);
///   A = B * 2.0f + cufuse::sin(C);   // one kernel on the current stream
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_CUFUSE_CUH
#endif

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/extents.hpp"
#include "core/index.cuh"
#include "core/types.cuh"
#include "eval/assign.cuh"
#include "eval/multi.cuh"
#include "expr/broadcast.cuh"
#include "expr/functions.cuh"
#include "expr/node.cuh"
#include "expr/operators.cuh"
#include "graph.cuh"
#include "memory/device.hpp"
#include "memory/stream.hpp"
#include "memory/tensor.cuh"
#include "memory/tensor_view.cuh"
#include "memory/views.cuh"
#include "reduce/functions.cuh"
#include "reduce/node.cuh"

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_CUFUSE_CUH
#undef CUFUSE_DETAIL_FIRST_CUFUSE_CUH
#undef CUFUSE_DETAIL_FIRST
#include "eval/assign.cuh"
#endif
