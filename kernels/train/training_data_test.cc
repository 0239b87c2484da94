// Training data with Kaldi transition-id alignments (gmm-acc-stats-ali's
// input): each frame goes to its transition-id's pdf, the kept frames'
// transition-ids are counted, and an id outside the model is an error naming
// the utterance and frame.
#include "kernels/train/training_data.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "gtest/gtest.h"
#include "kernels/io/kaldi_int_vector_archive.h"
#include "kernels/io/kaldi_matrix_archive.h"

namespace gmmscore {
namespace {

class TransitionIdDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gmmscore_tid_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    // Fresh each run; GMMSCORE_TEST_SEED=N repeats one, as in the other tests.
    const char* fixed = std::getenv("GMMSCORE_TEST_SEED");
    const unsigned seed = fixed != nullptr ? static_cast<unsigned>(std::strtoul(fixed, nullptr, 10))
                                           : std::random_device{}();
    std::printf("seed %u\n", seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> tid(1, 12);
    std::normal_distribution<float> x;
    std::vector<KaldiMatrixEntry> feats;
    for (const auto& [key, frames] : {std::pair<std::string, int>{"u1", 7}, {"u2", 11}}) {
      FloatMatrix m(frames, 3);
      for (int64_t i = 0; i < m.rows() * m.cols(); ++i) m.data()[i] = x(rng);
      feats.push_back({key, std::move(m)});
      std::vector<int32_t> ali(frames);
      for (int32_t& t : ali) t = tid(rng);
      alignments_.push_back({key, ali});
    }
    ASSERT_TRUE(WriteKaldiMatrixArchive("ark:" + (dir_ / "feats.ark").string(), feats).ok());
    WriteAlignments();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteAlignments() {
    ASSERT_TRUE(WriteKaldiIntVectorArchive("ark,t:" + (dir_ / "ali.txt").string(), alignments_).ok());
  }
  TrainingDataOptions Options() {
    TrainingDataOptions options;
    options.features = "ark:" + (dir_ / "feats.ark").string();
    options.alignments = "ark,t:" + (dir_ / "ali.txt").string();
    options.num_states = 6;
    options.transition_id_to_pdf = {-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};  // 2 ids per pdf
    return options;
  }

  std::filesystem::path dir_;
  std::vector<KaldiIntVectorEntry> alignments_;
};

TEST_F(TransitionIdDataTest, FramesGoToTheirPdfsAndTransitionsAreCounted) {
  const TrainingDataOptions options = Options();
  absl::StatusOr<TrainingData> data = LoadTrainingData(options);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->frames, 18);
  std::vector<double> expected(13, 0.0);
  std::vector<int32_t> pdfs;
  for (const KaldiIntVectorEntry& entry : alignments_) {
    for (int32_t t : entry.value) {
      expected[t] += 1.0;
      pdfs.push_back(options.transition_id_to_pdf[t]);
    }
  }
  EXPECT_EQ(data->transition_counts, expected);
  std::vector<int32_t> got;
  for (const TrainingBlock& block : data->blocks) {
    for (const StatsPair& pair : block.pairs) {
      EXPECT_EQ(pair.weight, 1.0f);
      got.push_back(pair.target);
    }
  }
  EXPECT_EQ(got, pdfs);
}

TEST_F(TransitionIdDataTest, SubsamplingThinsTheStatisticsNotTheTransitionCounts) {
  TrainingDataOptions options = Options();
  options.subsample = 3;
  absl::StatusOr<TrainingData> data = LoadTrainingData(options);
  ASSERT_TRUE(data.ok()) << data.status();
  double counted = 0.0;
  for (double c : data->transition_counts) counted += c;
  EXPECT_EQ(counted, 7 + 11);  // every frame, as gmm-acc-stats-ali counts them
  EXPECT_EQ(data->frames, 7);  // frames 0, 3, 6 of u1 and 0, 3, 6, 9 of u2
}

TEST_F(TransitionIdDataTest, AnIdOutsideTheModelNamesUtteranceAndFrame) {
  alignments_[1].value[4] = 13;
  WriteAlignments();
  absl::StatusOr<TrainingData> data = LoadTrainingData(Options());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find("'u2' frame 4: transition-id 13"), std::string::npos) << data.status();
  alignments_[1].value[4] = 0;  // transition-ids start at 1
  WriteAlignments();
  EXPECT_EQ(LoadTrainingData(Options()).status().code(), absl::StatusCode::kInvalidArgument);
  TrainingDataOptions no_alignments = Options();
  no_alignments.alignments.clear();
  EXPECT_EQ(LoadTrainingData(no_alignments).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
