// fMLLR matrices from Kaldi files into FeatureTransform: single-matrix files
// (text and binary, D x (D+1) and D x D), archives keyed by utterance, and
// the shape errors naming the file.
#include "kernels/io/kaldi_fmllr.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/io/kaldi_matrix_archive.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using io_testing::TempPath;
using io_testing::WriteFile;

FloatMatrix Matrix(int rows, int cols, float seed) {
  FloatMatrix m(rows, cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) m.at(r, c) = (r == c ? 1.0f : 0.0f) + seed * 0.01f * (r + 2 * c - 3);
  }
  return m;
}

// One matrix object as a single file: an archive entry without "KEY ".
std::string MatrixObject(const FloatMatrix& m, bool text) {
  std::string entry;
  EXPECT_TRUE(AppendKaldiMatrixEntry("k", m.view(), text, &entry).ok());
  return entry.substr(2);
}

// y = A x + b computed here from the matrix, in double.
std::vector<double> Expected(const FloatMatrix& m, const std::vector<float>& x) {
  std::vector<double> y(m.rows());
  for (int r = 0; r < m.rows(); ++r) {
    double sum = m.cols() > m.rows() ? m.at(r, m.rows()) : 0.0;
    for (int c = 0; c < m.rows(); ++c) sum += double{m.at(r, c)} * x[c];
    y[r] = sum;
  }
  return y;
}

void ExpectApplies(const FeatureTransform& t, const FloatMatrix& m) {
  std::vector<float> x(m.rows());
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * i - 1.0f;
  FloatMatrix in(1, m.rows());
  std::copy(x.begin(), x.end(), in.data());
  FloatMatrix out;
  ASSERT_TRUE(t.Apply(in.view(), &out).ok());
  const std::vector<double> want = Expected(m, x);
  for (int d = 0; d < m.rows(); ++d) EXPECT_NEAR(out.at(0, d), want[d], 1e-5) << d;
}

TEST(KaldiFmllrTest, SingleMatrixFilesTextAndBinary) {
  for (const bool text : {false, true}) {
    for (const int cols : {5, 4}) {
      const FloatMatrix m = Matrix(4, cols, 1.5f);
      const std::string path = TempPath(absl::StrCat("fmllr_", text, "_", cols, ".mat"));
      WriteFile(path, MatrixObject(m, text));
      absl::StatusOr<FmllrTransforms> fmllr = ReadFmllrTransforms(path, 4);
      ASSERT_TRUE(fmllr.ok()) << fmllr.status();
      // A single matrix applies to every utterance.
      absl::StatusOr<const FeatureTransform*> t = fmllr->For("any_utterance");
      ASSERT_TRUE(t.ok());
      EXPECT_EQ((*t)->dim(), 4);
      ExpectApplies(**t, m);
    }
  }
}

TEST(KaldiFmllrTest, ArchiveKeyedByUtterance) {
  for (const bool text : {false, true}) {
    const std::string path = TempPath(text ? "trans.txt" : "trans.ark");
    const FloatMatrix a = Matrix(3, 4, 1.0f), b = Matrix(3, 3, -2.0f);
    ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat(text ? "ark,t:" : "ark:", path),
                                        {{"utt1", a}, {"utt2", b}}).ok());
    absl::StatusOr<FmllrTransforms> fmllr = ReadFmllrTransforms(absl::StrCat("ark:", path), 3);
    ASSERT_TRUE(fmllr.ok()) << fmllr.status();
    EXPECT_EQ(fmllr->by_key.size(), 2u);
    ExpectApplies(**fmllr->For("utt1"), a);
    ExpectApplies(**fmllr->For("utt2"), b);
    absl::Status missing = fmllr->For("utt3").status();
    EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(missing.message(), HasSubstr("utt3"));
    EXPECT_THAT(missing.message(), HasSubstr(path));
  }
}

TEST(KaldiFmllrTest, ArchiveKeyedBySpeakerThroughUtt2spk) {
  const std::string path = TempPath("spk_trans.ark");
  const FloatMatrix a = Matrix(3, 4, 1.0f), b = Matrix(3, 4, -2.0f);
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", path), {{"spkA", a}, {"spkB", b}}).ok());
  absl::StatusOr<FmllrTransforms> fmllr = ReadFmllrTransforms(absl::StrCat("ark:", path), 3);
  ASSERT_TRUE(fmllr.ok()) << fmllr.status();
  fmllr->utt2spk = {{"u1", "spkA"}, {"u2", "spkB"}, {"u3", "spkA"}, {"u4", "spkC"}};
  ExpectApplies(**fmllr->For("u1"), a);
  ExpectApplies(**fmllr->For("u2"), b);
  ExpectApplies(**fmllr->For("u3"), a);
  EXPECT_THAT(fmllr->For("u4").status().message(), HasSubstr("speaker 'spkC'"));
  EXPECT_THAT(fmllr->For("u9").status().message(), HasSubstr("utterance 'u9' has no speaker"));
}

TEST(KaldiFmllrTest, WrongShapeNamesTheFileAndEntry) {
  const std::string single = TempPath("wide.mat");
  WriteFile(single, MatrixObject(Matrix(4, 6, 1.0f), false));
  absl::Status status = ReadFmllrTransforms(single, 4).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(single));
  EXPECT_THAT(status.message(), HasSubstr("4 x 6"));
  EXPECT_THAT(status.message(), HasSubstr("4 x 5"));

  // Right for 4-dim features, wrong for 39.
  WriteFile(single, MatrixObject(Matrix(4, 5, 1.0f), true));
  EXPECT_THAT(ReadFmllrTransforms(single, 39).status().message(), HasSubstr("39 x 40"));

  const std::string ark = TempPath("trans.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", ark), {{"good", Matrix(3, 4, 1.0f)},
                                                                  {"tall", Matrix(4, 4, 1.0f)}}).ok());
  status = ReadFmllrTransforms(absl::StrCat("ark:", ark), 3).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(ark));
  EXPECT_THAT(status.message(), HasSubstr("'tall'"));

  FloatMatrix nan = Matrix(2, 3, 1.0f);
  nan.at(1, 2) = std::nanf("");
  WriteFile(single, MatrixObject(nan, false));
  status = ReadFmllrTransforms(single, 2).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(single));
}

TEST(KaldiFmllrTest, DamagedAndMissingFiles) {
  EXPECT_EQ(ReadFmllrTransforms(TempPath("none.mat"), 3).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFmllrTransforms(absl::StrCat("ark:", TempPath("none.ark")), 3).status().code(),
            absl::StatusCode::kNotFound);
  const std::string cut = TempPath("cut.mat");
  const std::string bytes = MatrixObject(Matrix(3, 4, 1.0f), false);
  WriteFile(cut, bytes.substr(0, bytes.size() - 5));
  absl::Status status = ReadFmllrTransforms(cut, 3).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(cut));
  const std::string ark = TempPath("dup.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", ark), {{"u", Matrix(3, 4, 1.0f)},
                                                                  {"u", Matrix(3, 4, 2.0f)}}).ok());
  EXPECT_THAT(ReadFmllrTransforms(absl::StrCat("ark:", ark), 3).status().message(), HasSubstr("twice"));
}

}  // namespace
}  // namespace gmmscore
