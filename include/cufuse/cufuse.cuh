/// \file The whole fusion library: tensors, expressions, evaluation.
///
///   cufuse::tensor<float, 1> A(n), B(n), C(n);
///   A = B * 2.0f + cufuse::sin(C);   // one kernel on the current stream
#pragma once

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
