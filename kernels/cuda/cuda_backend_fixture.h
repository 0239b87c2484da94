// For tests of the CUDA backend: a fixture holding a backend on device 0
// (skipping where no CUDA device answers) and preparing synthetic models.
//
//   class MyTest : public CudaBackendFixture {};
//   TEST_F(MyTest, Scores) {
//     auto prepared = Prepare({.num_states = 40, .min_gaussians = 2, .max_gaussians = 6, .dim = 13});
//     ... backend_->ScoreBatch(...) ...
//   }
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_FIXTURE_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_FIXTURE_H_

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {

class CudaBackendFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto backend = CreateCudaBackend(0);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
  }

  std::shared_ptr<const PreparedModel> Prepare(const SyntheticModelSpec& spec) {
    auto model = GenerateSyntheticModel(spec);
    EXPECT_TRUE(model.ok()) << model.status();
    auto prepared = backend_->Prepare(std::make_shared<const DiagGmmModel>(std::move(*model)));
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    return *prepared;
  }

  std::unique_ptr<ScoringBackend> backend_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_FIXTURE_H_
