// Times every likelihood algorithm on the paper's configurations, beside the
// hardware ceilings measured in the same run. Each variant is checked
// against the float64 reference before it is timed.
//
//   loglik_bench --configs=5000x16x36,5000x256x36 --frames=8,16,256 --csv=out.csv
//
// Kernel times: CUDA events around each launch, median of --repeats after a
// warm-up, features rotated over 8 buffers and the model over enough copies
// to exceed 4x the L2, so no run is served from cache unfairly.
// End-to-end: wall time of ScoringBackend::Score (host buffer in, host
// buffer out, frame totals included), median of --repeats.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/ceilings.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/reference_scorer.h"

ABSL_FLAG(std::string, configs, "5000x16x36,5000x256x36", "models as STATESxGAUSSIANSxDIM, comma-separated");
ABSL_FLAG(std::string, frames, "8,16,256", "window lengths T, comma-separated");
ABSL_FLAG(std::string, algos, "fused8,fused16,fused32,fused8x2,fused8x4,split8,tf32x3,wgmma,wgmma_f16,gemm", "algorithms to time");
ABSL_FLAG(int, repeats, 30, "timed runs per point (median reported)");
ABSL_FLAG(std::string, csv, "", "also write every row to this CSV file");
ABSL_FLAG(std::string, many_models, "",
          "also time MODELSxSTATESxGAUSSIANSxDIM (e.g. 20x5000x32x39) models scored in one launch "
          "versus one launch per model, --many_streams streams of --chunk_frames frames spread evenly");
ABSL_FLAG(int, many_streams, 200, "streams for --many_models");
ABSL_FLAG(int, chunk_frames, 10, "frames per stream chunk for --many_models");

namespace gmmscore {
namespace {

struct Config {
  int states, gaussians, dim;
};

struct Row {
  std::string config, algo;
  int64_t frames;
  double kernel_ms, frames_per_s, tflops, pct_fma, vs_gemm, e2e_ms, floor_ms, max_error;
};

absl::StatusOr<std::vector<Config>> ParseConfigs(const std::string& text) {
  std::vector<Config> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, 'x');
    Config c;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &c.states) ||
        !absl::SimpleAtoi(parts[1], &c.gaussians) || !absl::SimpleAtoi(parts[2], &c.dim)) {
      return absl::InvalidArgumentError(absl::StrCat("bad config '", item, "'"));
    }
    out.push_back(c);
  }
  return out;
}

double Median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

template <typename Work>
absl::StatusOr<double> MedianEventMs(Work work, int repeats, cudaStream_t stream) {
  GMM_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::Create());
  std::vector<double> times;
  for (int r = -3; r < repeats; ++r) {
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream), "record");
    GMM_RETURN_IF_ERROR(work());
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream), "record");
    GMM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()), "sync");
    float ms = 0;
    GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()), "elapsed");
    if (r >= 0) times.push_back(ms);
  }
  return Median(times);
}

template <typename Work>
absl::StatusOr<double> MedianWallMs(Work work, int repeats) {
  std::vector<double> times;
  for (int r = -3; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    GMM_RETURN_IF_ERROR(work());
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 0) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Median(times);
}

// Issue 4, "many models": N speaker-cluster models, each scoring the chunks
// of its share of the streams, in one launch versus one launch per model,
// as kernels (CUDA events) and end to end (Score per model vs ScoreBatch).
absl::Status RunManyModels(ScoringBackend& backend, const std::string& spec, int repeats) {
  std::vector<std::string> parts = absl::StrSplit(spec, 'x');
  int count = 0;
  if (parts.size() != 4 || !absl::SimpleAtoi(parts[0], &count) || count <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad --many_models '", spec, "'"));
  }
  GMM_ASSIGN_OR_RETURN(std::vector<Config> configs, ParseConfigs(absl::StrCat(parts[1], "x", parts[2], "x", parts[3])));
  const Config config = configs[0];
  const int streams = absl::GetFlag(FLAGS_many_streams), chunk = absl::GetFlag(FLAGS_chunk_frames);
  const int64_t frames = static_cast<int64_t>(streams / count) * chunk;
  std::vector<std::shared_ptr<const PreparedModel>> prepared;
  std::vector<DeviceModel> resident;
  std::vector<FloatMatrix> host_features;
  std::vector<DeviceBuffer<float>> features, outputs;
  for (int m = 0; m < count; ++m) {
    GMM_ASSIGN_OR_RETURN(DiagGmmModel generated,
                         GenerateSyntheticModel({.num_states = config.states, .min_gaussians = config.gaussians,
                                                 .max_gaussians = config.gaussians, .dim = config.dim,
                                                 .seed = static_cast<uint64_t>(100 + m)}));
    auto model = std::make_shared<const DiagGmmModel>(std::move(generated));
    GMM_ASSIGN_OR_RETURN(DeviceModel copy, DeviceModel::Upload(*model));
    resident.push_back(std::move(copy));
    GMM_ASSIGN_OR_RETURN(auto p, backend.Prepare(model));
    prepared.push_back(p);
    host_features.push_back(GenerateSyntheticFeatures(*model, frames, 500 + m));
    GMM_ASSIGN_OR_RETURN(auto f, DeviceBuffer<float>::FromHost(host_features.back().data(), frames * config.dim));
    features.push_back(std::move(f));
    GMM_ASSIGN_OR_RETURN(auto o, DeviceBuffer<float>::Allocate(frames * config.states));
    outputs.push_back(std::move(o));
  }
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  LoglikWorkspace workspace;
  std::vector<LoglikJob> jobs;
  for (int m = 0; m < count; ++m) jobs.push_back({&resident[m], features[m].data(), frames, outputs[m].data()});

  // Correct first: the one-launch output of every model against float64.
  for (auto& o : outputs) GMM_CUDA_RETURN_IF_ERROR(cudaMemset(o.data(), 0xFF, o.bytes()), "poison");
  GMM_RETURN_IF_ERROR(LaunchMultiModelLoglik(jobs, workspace, stream.get()));
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()), "run");
  double worst = 0;
  for (int m = 0; m < count; ++m) {
    const int64_t checked = std::min<int64_t>(frames, 4);
    FloatMatrix check(checked, config.states);
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpy(check.data(), outputs[m].data(), check.rows() * check.cols() * 4,
                                        cudaMemcpyDeviceToHost), "copy back");
    worst = std::max(worst, MaxNormalizedError(check, ReferenceLogLikelihoods(prepared[m]->model(),
                                                                              host_features[m].view().Rows(0, checked))));
  }
  if (!(worst <= ErrorBound(Algorithm::kSplit8))) {
    return absl::InternalError(absl::StrCat("multi-model launch: max normalized error ", worst));
  }

  GMM_ASSIGN_OR_RETURN(double one_launch, MedianEventMs([&] { return LaunchMultiModelLoglik(jobs, workspace, stream.get()); },
                                                        repeats, stream.get()));
  GMM_ASSIGN_OR_RETURN(double per_model, MedianEventMs(
                                             [&]() -> absl::Status {
                                               for (const LoglikJob& job : jobs) {
                                                 GMM_RETURN_IF_ERROR(LaunchLoglik(*job.model, Algorithm::kSplit8, job.features,
                                                                                  job.num_frames, job.loglikes, workspace,
                                                                                  stream.get()));
                                               }
                                               return absl::OkStatus();
                                             },
                                             repeats, stream.get()));
  std::vector<ScoreResult> results(count);
  std::vector<ScoreWindow> batch;
  for (int m = 0; m < count; ++m) batch.push_back({prepared[m].get(), host_features[m].view(), &results[m]});
  GMM_ASSIGN_OR_RETURN(double e2e_batch, MedianWallMs([&] { return backend.ScoreBatch(batch, {}); }, repeats));
  GMM_ASSIGN_OR_RETURN(double e2e_each, MedianWallMs(
                                            [&]() -> absl::Status {
                                              for (const ScoreWindow& job : batch) {
                                                GMM_RETURN_IF_ERROR(backend.Score(*job.model, job.features, {}, job.result));
                                              }
                                              return absl::OkStatus();
                                            },
                                            repeats));
  const double total_frames = static_cast<double>(frames) * count;
  std::printf("\nmany models: %d x %s, %d streams x %d frames (%lld frames per model), max err %.2g\n", count,
              absl::StrCat(parts[1], "x", parts[2], "x", parts[3]).c_str(), streams, chunk,
              static_cast<long long>(frames), worst);
  std::printf("  kernels: one launch %.4f ms (%.0f frames/s), %d launches %.4f ms (%.0f frames/s), ratio %.2f\n",
              one_launch, total_frames / (one_launch * 1e-3), count, per_model, total_frames / (per_model * 1e-3),
              per_model / one_launch);
  std::printf("  end to end: ScoreBatch %.4f ms, %d x Score %.4f ms, ratio %.2f\n", e2e_batch, count, e2e_each,
              e2e_each / e2e_batch);
  return absl::OkStatus();
}

absl::Status Run() {
  GMM_ASSIGN_OR_RETURN(std::vector<Config> configs, ParseConfigs(absl::GetFlag(FLAGS_configs)));
  std::vector<int64_t> frame_list;
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_frames), ',', absl::SkipEmpty())) {
    int64_t value;
    if (!absl::SimpleAtoi(f, &value)) return absl::InvalidArgumentError("bad --frames");
    frame_list.push_back(value);
  }
  std::vector<Algorithm> algos;
  for (absl::string_view a : absl::StrSplit(absl::GetFlag(FLAGS_algos), ',', absl::SkipEmpty())) {
    GMM_ASSIGN_OR_RETURN(Algorithm algo, ParseAlgorithm(a));
    algos.push_back(algo);
  }
  const int repeats = absl::GetFlag(FLAGS_repeats);

  cudaDeviceProp prop{};
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, 0), "device properties");
  GMM_ASSIGN_OR_RETURN(double fma_tflops, MeasureFmaPeakTflops());
  GMM_ASSIGN_OR_RETURN(double copy_gbs, MeasureCopyBandwidthGBs());
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::printf("ceilings (this run): FP32 FMA loop %.1f TFLOP/s, device copy %.0f GB/s (read+write)\n",
              fma_tflops, copy_gbs);

  GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> backend, CreateCudaBackend(0));
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  GMM_ASSIGN_OR_RETURN(CublasHandle cublas, CublasHandle::Create());
  LoglikWorkspace workspace;
  workspace.cublas = cublas.get();
  GMM_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::Create());

  std::vector<Row> rows;
  for (const Config& config : configs) {
    const std::string name = absl::StrCat(config.states, "x", config.gaussians, "x", config.dim);
    GMM_ASSIGN_OR_RETURN(DiagGmmModel generated,
                         GenerateSyntheticModel({.num_states = config.states, .min_gaussians = config.gaussians,
                                                 .max_gaussians = config.gaussians, .dim = config.dim, .seed = 1}));
    auto model = std::make_shared<const DiagGmmModel>(std::move(generated));
    const double model_bytes = static_cast<double>(model->num_gaussians()) * (1 + 2 * model->dim()) * 4;
    const int copies = static_cast<int>(std::clamp(std::ceil(4.0 * prop.l2CacheSize / model_bytes), 1.0, 8.0));
    std::vector<DeviceModel> resident;
    for (int c = 0; c < copies; ++c) {
      GMM_ASSIGN_OR_RETURN(DeviceModel copy, DeviceModel::Upload(*model));
      resident.push_back(std::move(copy));
    }
    GMM_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedModel> prepared, backend->Prepare(model));
    std::printf("model %s: %.1f MB, %d resident copies for rotation\n", name.c_str(), model_bytes / 1e6, copies);

    for (int64_t frames : frame_list) {
      constexpr int kFeatureSets = 8;
      std::vector<FloatMatrix> host_features;
      std::vector<DeviceBuffer<float>> features;
      for (int i = 0; i < kFeatureSets; ++i) {
        host_features.push_back(GenerateSyntheticFeatures(*model, frames, 1000 + i));
        GMM_ASSIGN_OR_RETURN(auto d, DeviceBuffer<float>::FromHost(host_features.back().data(),
                                                                   frames * model->dim()));
        features.push_back(std::move(d));
      }
      GMM_ASSIGN_OR_RETURN(auto out, DeviceBuffer<float>::Allocate(frames * model->num_states()));
      const int64_t checked = std::min<int64_t>(frames, 16);
      const std::vector<double> reference =
          ReferenceLogLikelihoods(*model, host_features[0].view().Rows(0, checked));
      const double flops = static_cast<double>(frames) * model->num_gaussians() * (4.0 * model->dim() + 2);
      double gemm_ms = 0;
      std::vector<Row> point;
      for (Algorithm algo : algos) {
        // Correct first: poison, run, compare the first `checked` frames.
        GMM_CUDA_RETURN_IF_ERROR(cudaMemset(out.data(), 0xFF, out.bytes()), "poison");
        GMM_RETURN_IF_ERROR(LaunchLoglik(resident[0], algo, features[0].data(), frames, out.data(), workspace,
                                         stream.get()));
        FloatMatrix check(checked, model->num_states());
        GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()), "run");
        GMM_CUDA_RETURN_IF_ERROR(cudaMemcpy(check.data(), out.data(), check.rows() * check.cols() * 4,
                                            cudaMemcpyDeviceToHost),
                                 "copy back");
        const double error = MaxNormalizedError(check, reference);
        if (!(error <= ErrorBound(algo))) {
          return absl::InternalError(absl::StrCat(AlgorithmName(algo), " on ", name, " T=", frames,
                                                  ": max normalized error ", error, " > ", ErrorBound(algo)));
        }
        std::vector<double> times;
        for (int r = -3; r < repeats; ++r) {
          const DeviceModel& m = resident[(r + 3) % copies];
          GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()), "record");
          GMM_RETURN_IF_ERROR(LaunchLoglik(m, algo, features[(r + 3) % kFeatureSets].data(), frames, out.data(),
                                           workspace, stream.get()));
          GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()), "record");
          GMM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()), "sync");
          float ms = 0;
          GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()), "elapsed");
          if (r >= 0) times.push_back(ms);
        }
        std::vector<double> e2e;
        ScoreResult result;
        for (int r = -3; r < repeats; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          GMM_RETURN_IF_ERROR(backend->Score(*prepared, host_features[(r + 3) % kFeatureSets].view(),
                                             {.algorithm = algo}, &result));
          const auto t1 = std::chrono::steady_clock::now();
          if (r >= 0) e2e.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        Row row;
        row.config = name;
        row.algo = std::string(AlgorithmName(algo));
        row.frames = frames;
        row.kernel_ms = Median(times);
        row.frames_per_s = frames / (row.kernel_ms * 1e-3);
        row.tflops = flops / (row.kernel_ms * 1e-3) / 1e12;
        row.pct_fma = 100.0 * row.tflops / fma_tflops;
        row.e2e_ms = Median(e2e);
        // Floor: the arithmetic at the FMA peak, or one read of the model.
        row.floor_ms = std::max(flops / (fma_tflops * 1e12), model_bytes / (copy_gbs * 1e9 / 2)) * 1e3;
        row.max_error = error;
        if (algo == Algorithm::kGemm) gemm_ms = row.kernel_ms;
        point.push_back(row);
      }
      for (Row& row : point) {
        row.vs_gemm = gemm_ms > 0 ? gemm_ms / row.kernel_ms : 0;
        rows.push_back(row);
      }
    }
  }

  std::printf("\n%-12s %6s %-8s %10s %12s %8s %7s %8s %9s %9s %9s\n", "model", "T", "algo", "kernel_ms",
              "frames/s", "TFLOP/s", "%FMA", "x_gemm", "e2e_ms", "floor_ms", "max_err");
  for (const Row& r : rows) {
    std::printf("%-12s %6lld %-8s %10.4f %12.0f %8.2f %7.1f %8.2f %9.4f %9.4f %9.2g\n", r.config.c_str(),
                static_cast<long long>(r.frames), r.algo.c_str(), r.kernel_ms, r.frames_per_s, r.tflops, r.pct_fma,
                r.vs_gemm, r.e2e_ms, r.floor_ms, r.max_error);
  }
  if (const std::string spec = absl::GetFlag(FLAGS_many_models); !spec.empty()) {
    GMM_RETURN_IF_ERROR(RunManyModels(*backend, spec, repeats));
  }
  if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot write ", path));
    std::fprintf(f, "model,frames,algo,kernel_ms,frames_per_s,tflops,pct_fma,x_gemm,e2e_ms,floor_ms,max_err,"
                    "fma_peak_tflops,copy_gbs,device\n");
    for (const Row& r : rows) {
      std::fprintf(f, "%s,%lld,%s,%.5f,%.0f,%.3f,%.2f,%.3f,%.5f,%.5f,%.3g,%.2f,%.0f,%s\n", r.config.c_str(),
                   static_cast<long long>(r.frames), r.algo.c_str(), r.kernel_ms, r.frames_per_s, r.tflops,
                   r.pct_fma, r.vs_gemm, r.e2e_ms, r.floor_ms, r.max_error, fma_tflops, copy_gbs, prop.name);
    }
    std::fclose(f);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status status = gmmscore::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "loglik_bench: error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
