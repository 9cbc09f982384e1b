// cufuse CUDA Graph: capture a pipeline of assignments and reductions once, replay it many
// times. Every cufuse assignment and reduction is stream-ordered (temporaries come from
// cudaMallocAsync, nothing synchronizes inside), so the whole pipeline is capturable; a replay
// reads the inputs' current contents. Each replay is checked against a CPU loop.
#include <cufuse/cufuse.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: CUDA Graphs need a GPU\n");
    return 0;
  }
  const cufuse::index_t rows = 512, cols = 768;
  cufuse::tensor<float, 2> X({rows, cols}), Y({rows, cols});
  cufuse::tensor<float, 1> colsum({cols});
  cufuse::tensor<float, 0> total;

  cudaStream_t stream;
  CUFUSE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Three steps: a softmax per row, the column sums of the result, and their sum of squares.
  auto g = cufuse::capture(stream, [&] {
    Y = cufuse::softmax(X, -1);
    colsum = cufuse::sum(Y, 0);
    total = cufuse::sum(colsum * colsum);
  });

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> x(std::size_t(rows * cols));
  int bad_replays = 0;
  const int replays = 10;
  for (int rep = 0; rep < replays; ++rep) {
    cufuse::stream_guard on(stream); // the upload and download below are ordered on `stream`
    for (auto& v : x) {
      v = u(rng);
    }
    X.upload(x);      // new input, stream-ordered before the replay
    g.launch(stream); // three kernels' worth of work, one launch call
    CUFUSE_CUDA_CHECK(cudaStreamSynchronize(stream));
    // CPU reference in double precision
    std::vector<double> cs(std::size_t(cols), 0.0);
    for (cufuse::index_t i = 0; i < rows; ++i) {
      const float* xr = x.data() + i * cols;
      double m = -INFINITY, s = 0;
      for (cufuse::index_t j = 0; j < cols; ++j) {
        m = std::max(m, double(xr[j]));
      }
      for (cufuse::index_t j = 0; j < cols; ++j) {
        s += std::exp(double(xr[j]) - m);
      }
      for (cufuse::index_t j = 0; j < cols; ++j) {
        cs[std::size_t(j)] += std::exp(double(xr[j]) - m) / s;
      }
    }
    double want = 0;
    for (double c : cs) {
      want += c * c;
    }
    const float got = total.download()[0];
    bad_replays += !(std::fabs(got - want) <= 1e-4 * want);
  }
  CUFUSE_CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("captured softmax -> column sums -> sum of squares; %d replays with new inputs: %s\n",
              replays, bad_replays == 0 ? "all correct" : "WRONG");
  return bad_replays == 0 ? 0 : 1;
}
