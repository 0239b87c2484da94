// Kaldi binary and whole-model reading: final.mdl (TransitionModel +
// AmDiagGmm) crafted byte for byte as Kaldi's Write() functions lay it out,
// text and binary; lone DiagGmms; scp tables with byte offsets.
#include <cstring>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/model_loader.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using io_testing::TempPath;
using io_testing::WriteFile;

// Kaldi's binary writers (io-funcs.h), spelled out independently.
void Token(std::string* out, const char* token) { out->append(token).push_back(' '); }
void Int(std::string* out, int32_t v) {
  out->push_back(4);
  out->append(reinterpret_cast<const char*>(&v), 4);
}
void Float(std::string* out, float v) {
  out->push_back(4);
  out->append(reinterpret_cast<const char*>(&v), 4);
}
void IntVector(std::string* out, std::vector<int32_t> v) {
  out->push_back(4);
  const int32_t n = static_cast<int32_t>(v.size());
  out->append(reinterpret_cast<const char*>(&n), 4);
  out->append(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}
void FloatVector(std::string* out, std::vector<float> v) {
  Token(out, "FV");
  Int(out, static_cast<int32_t>(v.size()));
  out->append(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}
void FloatMatrixBytes(std::string* out, int rows, int cols, std::vector<float> v) {
  Token(out, "FM");
  Int(out, rows);
  Int(out, cols);
  out->append(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}

// A non-HMM topology (separate self-loop pdf classes, the "-1" marker) for
// phones 1 and 2: state 0 emits, loops (0.75) and goes to final state 1.
// Tuples (phone, hmm-state, forward-pdf, self-loop-pdf): (1,0,0,1), (2,0,2,1).
std::string BinaryTransitionModel() {
  std::string out;
  Token(&out, "<TransitionModel>");
  Token(&out, "<Topology>");
  IntVector(&out, {1, 2});
  IntVector(&out, {-1, 0, 0});
  Int(&out, -1);
  Int(&out, 1);   // entries
  Int(&out, 2);   // states
  Int(&out, 0);   // forward pdf class
  Int(&out, 1);   // self-loop pdf class
  Int(&out, 2);   // transitions
  Int(&out, 0);
  Float(&out, 0.75f);
  Int(&out, 1);
  Float(&out, 0.25f);
  Int(&out, -1);  // final state: no pdf
  Int(&out, -1);
  Int(&out, 0);
  Token(&out, "</Topology>");
  Token(&out, "<Tuples>");
  Int(&out, 2);
  for (int v : {1, 0, 0, 1, 2, 0, 2, 1}) Int(&out, v);
  Token(&out, "</Tuples>");
  Token(&out, "<LogProbs>");
  FloatVector(&out, {0.0f, -0.2876821f, -1.386294f, -0.2876821f, -1.386294f});
  Token(&out, "</LogProbs>");
  Token(&out, "</TransitionModel>");
  return out;
}

// Three pdfs of one Gaussian each, dimension 2.
std::string BinaryAmDiagGmm() {
  std::string out;
  Token(&out, "<DIMENSION>");
  Int(&out, 2);
  Token(&out, "<NUMPDFS>");
  Int(&out, 3);
  for (int pdf = 0; pdf < 3; ++pdf) {
    Token(&out, "<DiagGMM>");
    Token(&out, "<GCONSTS>");
    FloatVector(&out, {-3.0f});
    Token(&out, "<WEIGHTS>");
    FloatVector(&out, {1.0f});
    Token(&out, "<MEANS_INVVARS>");
    FloatMatrixBytes(&out, 1, 2, {static_cast<float>(pdf), 0.5f});  // mean = pdf / 1, 0.5 / 0.5 = 1
    Token(&out, "<INV_VARS>");
    FloatMatrixBytes(&out, 1, 2, {1.0f, 0.5f});
    Token(&out, "</DiagGMM>");
  }
  return out;
}

const char kTextFinalMdl[] =
    "<TransitionModel> \n<Topology> \n<TopologyEntry> \n<ForPhones> \n1 2 \n</ForPhones> \n"
    "<State> 0 <ForwardPdfClass> 0 <SelfLoopPdfClass> 1 <Transition> 0 0.75 <Transition> 1 0.25 </State> \n"
    "<State> 1 </State> \n</TopologyEntry> \n</Topology> \n<Tuples> 2 \n1 0 0 1 \n2 0 2 1 \n</Tuples> \n"
    "<LogProbs> \n [ 0 -0.2876821 -1.386294 -0.2876821 -1.386294 ]\n</LogProbs> \n</TransitionModel> \n"
    "<DIMENSION> 2 <NUMPDFS> 3 "
    "<DiagGMM> \n<GCONSTS>  [ -3 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  0 0.5 ]\n<INV_VARS>  [\n  1 0.5 ]\n</DiagGMM> \n"
    "<DiagGMM> \n<GCONSTS>  [ -3 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  1 0.5 ]\n<INV_VARS>  [\n  1 0.5 ]\n</DiagGMM> \n"
    "<DiagGMM> \n<GCONSTS>  [ -3 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  2 0.5 ]\n<INV_VARS>  [\n  1 0.5 ]\n</DiagGMM> \n";

void ExpectTransitions(const KaldiModel& model) {
  ASSERT_TRUE(model.transition_model.has_value());
  const KaldiTransitionModel& tm = *model.transition_model;
  EXPECT_EQ(tm.num_transition_ids(), 4);
  // tid 1: self-loop of (1,0) -> its self-loop pdf 1; tid 2: forward -> 0;
  // tid 3: self-loop of (2,0) -> 1; tid 4: forward -> 2.
  EXPECT_EQ(tm.TransitionIdToPdf(1), 1);
  EXPECT_EQ(tm.TransitionIdToPdf(2), 0);
  EXPECT_EQ(tm.TransitionIdToPdf(3), 1);
  EXPECT_EQ(tm.TransitionIdToPdf(4), 2);
  EXPECT_EQ(tm.TransitionIdToPdf(5), -1);
  EXPECT_EQ(tm.num_pdfs(), 3);
  EXPECT_EQ(model.am.dim, 2);
  EXPECT_EQ(model.am.pdfs.size(), 3u);
  EXPECT_FLOAT_EQ(model.am.pdfs[2].means_invvars.at(0, 0), 2.0f);
}

TEST(KaldiModelTest, BinaryFinalMdlKeepsTransitionIdToPdfMap) {
  const std::string bytes = std::string("\0B", 2) + BinaryTransitionModel() + BinaryAmDiagGmm();
  absl::StatusOr<KaldiModel> model = ParseKaldiModel(bytes, "final.mdl");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->binary);
  ExpectTransitions(*model);
}

TEST(KaldiModelTest, TextFinalMdlKeepsTransitionIdToPdfMap) {
  absl::StatusOr<KaldiModel> model = ParseKaldiModel(kTextFinalMdl, "final.mdl.txt");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->binary);
  ExpectTransitions(*model);
}

// The transition model as gmm-est writes it back: Kaldi's own layout, text
// and binary, for a topology with separate self-loop pdf classes (<Tuples>)
// and a plain HMM one (<Triples>); the acoustic model follows.
std::string TransitionPart(const std::string& text) { return text.substr(0, text.find("<DIMENSION>")); }

TEST(KaldiModelTest, TransitionModelIsWrittenBackAsKaldiWritesIt) {
  absl::StatusOr<KaldiModel> text = ParseKaldiModel(kTextFinalMdl, "final.mdl.txt");
  ASSERT_TRUE(text.ok()) << text.status();
  const std::string text_out = FormatKaldiModel(*text->transition_model, text->am, /*binary=*/false);
  EXPECT_EQ(TransitionPart(text_out), TransitionPart(kTextFinalMdl));

  const std::string tm_bytes = std::string("\0B", 2) + BinaryTransitionModel();
  absl::StatusOr<KaldiModel> binary = ParseKaldiModel(tm_bytes + BinaryAmDiagGmm(), "final.mdl");
  ASSERT_TRUE(binary.ok()) << binary.status();
  const std::string binary_out = FormatKaldiModel(*binary->transition_model, binary->am, /*binary=*/true);
  EXPECT_EQ(binary_out.substr(0, tm_bytes.size()), tm_bytes);
  EXPECT_EQ(binary_out.substr(tm_bytes.size()), FormatKaldiAmDiagGmmBinary(binary->am).substr(2));

  // Both read back to the same model: transitions, map and pdfs.
  for (const std::string& out : {text_out, binary_out}) {
    absl::StatusOr<KaldiModel> again = ParseKaldiModel(out, "again");
    ASSERT_TRUE(again.ok()) << again.status();
    ExpectTransitions(*again);
    EXPECT_EQ(again->transition_model->log_probs, text->transition_model->log_probs);
  }
}

TEST(KaldiModelTest, HmmTopologyIsWrittenWithTriples) {
  const std::string tm =
      "<TransitionModel> \n<Topology> \n<TopologyEntry> \n<ForPhones> \n1 2 \n</ForPhones> \n"
      "<State> 0 <PdfClass> 0 <Transition> 0 0.75 <Transition> 1 0.25 </State> \n"
      "<State> 1 </State> \n</TopologyEntry> \n</Topology> \n<Triples> 2 \n1 0 0 \n2 0 1 \n</Triples> \n"
      "<LogProbs> \n [ 0 -0.2876821 -1.386294 -0.2876821 -1.386294 ]\n</LogProbs> \n</TransitionModel> \n";
  const std::string am =
      "<DIMENSION> 2 <NUMPDFS> 2 "
      "<DiagGMM> \n<GCONSTS>  [ -3 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  0 0.5 ]\n<INV_VARS>  [\n  1 0.5 ]\n</DiagGMM> \n"
      "<DiagGMM> \n<GCONSTS>  [ -3 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  1 0.5 ]\n<INV_VARS>  [\n  1 0.5 ]\n</DiagGMM> \n";
  absl::StatusOr<KaldiModel> model = ParseKaldiModel(tm + am, "hmm.mdl.txt");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->transition_model->IsHmm());
  EXPECT_EQ(model->transition_model->first_transition_id(1), 1);
  EXPECT_EQ(model->transition_model->first_transition_id(2), 3);
  EXPECT_EQ(model->transition_model->first_transition_id(3), 5);
  EXPECT_EQ(TransitionPart(FormatKaldiModel(*model->transition_model, model->am, false)), tm);
  absl::StatusOr<KaldiModel> binary =
      ParseKaldiModel(FormatKaldiModel(*model->transition_model, model->am, true), "hmm.mdl");
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(TransitionPart(FormatKaldiModel(*binary->transition_model, binary->am, false)), tm);
}

TEST(KaldiModelTest, BinaryAndTextGiveTheSameScoringModel) {
  const std::string bin_path = TempPath("final.mdl");
  WriteFile(bin_path, std::string("\0B", 2) + BinaryTransitionModel() + BinaryAmDiagGmm());
  const std::string txt_path = TempPath("final.mdl.txt");
  WriteFile(txt_path, kTextFinalMdl);
  EXPECT_EQ(*DetectModelFormat(bin_path), ModelFormat::kKaldiBinary);
  absl::StatusOr<DiagGmmModel> from_binary = LoadModel(bin_path);
  absl::StatusOr<DiagGmmModel> from_text = LoadModel(txt_path);
  ASSERT_TRUE(from_binary.ok()) << from_binary.status();
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  FloatMatrix frames(2, 2);
  frames.at(0, 0) = 0.5f;
  frames.at(1, 1) = -1.0f;
  EXPECT_EQ(ReferenceLogLikelihoods(*from_binary, frames.view()), ReferenceLogLikelihoods(*from_text, frames.view()));
  // Mean (2, 1), variances (1, 2): log N((0.5, 0)) by hand.
  const double expected = -std::log(2 * M_PI) - 0.5 * std::log(2.0) - 0.5 * (1.5 * 1.5 + 0.5);
  EXPECT_NEAR(ReferenceLogLikelihoods(*from_binary, frames.view())[2], expected, 1e-5);
  // Our binary writer produces what we read, byte for byte the same layout.
  const std::string written = FormatKaldiAmDiagGmmBinary(DiagGmmModelToKaldi(*from_binary));
  absl::StatusOr<KaldiModel> reread = ParseKaldiModel(written, "written");
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(reread->am.pdfs.size(), 3u);
  EXPECT_EQ(written.substr(0, 14), std::string("\0B<DIMENSION> ", 14));
}

TEST(KaldiModelTest, LoneDiagGmmTextAndBinary) {
  std::string bin("\0B", 2);
  Token(&bin, "<DiagGMM>");
  Token(&bin, "<WEIGHTS>");
  FloatVector(&bin, {0.25f, 0.75f});
  Token(&bin, "<MEANS_INVVARS>");
  FloatMatrixBytes(&bin, 2, 1, {0.0f, 2.0f});
  Token(&bin, "<INV_VARS>");
  FloatMatrixBytes(&bin, 2, 1, {1.0f, 1.0f});
  Token(&bin, "</DiagGMM>");
  absl::StatusOr<KaldiModel> binary = ParseKaldiModel(bin, "ubm");
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(binary->am.dim, 1);
  EXPECT_EQ(binary->am.pdfs.size(), 1u);
  absl::StatusOr<KaldiModel> text = ParseKaldiModel(
      "<DiagGMM> \n<WEIGHTS>  [ 0.25 0.75 ]\n<MEANS_INVVARS>  [\n  0 \n  2 ]\n<INV_VARS>  [\n  1 \n  1 ]\n</DiagGMM> \n", "ubm.txt");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->am.pdfs[0].weights, binary->am.pdfs[0].weights);
}

TEST(KaldiModelTest, DamagedBinaryNeverCrashesAndNamesTheProblem) {
  const std::string good = std::string("\0B", 2) + BinaryTransitionModel() + BinaryAmDiagGmm();
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const absl::Status status = ParseKaldiModel(good.substr(0, cut), "cut.mdl").status();
    ASSERT_FALSE(status.ok()) << cut;
    ASSERT_THAT(status.message(), HasSubstr("cut.mdl")) << cut;
  }
  EXPECT_EQ(ParseKaldiModel(good.substr(0, good.size() - 3), "cut.mdl").status().code(), absl::StatusCode::kDataLoss);
  std::string bad_size = good;
  bad_size[2 + 18 + 11] = 8;  // the size byte of the topology's phone vector
  const absl::Status status = ParseKaldiModel(bad_size, "bad.mdl").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("byte offset"));
  std::string unknown = good;
  unknown.replace(unknown.find("<Tuples>"), 8, "<Tuplez>");
  EXPECT_THAT(ParseKaldiModel(unknown, "bad.mdl").status().message(), HasSubstr("expected <Triples> or <Tuples>"));
  // Log-prob count that disagrees with the topology.
  std::string text = kTextFinalMdl;
  text.replace(text.find(" -0.2876821 -1.386294 ]"), 23, " ]");
  EXPECT_THAT(ParseKaldiModel(text, "t.mdl").status().message(), HasSubstr("<LogProbs> has 3 values, expected 5"));
}

TEST(KaldiScriptTableTest, ReadsObjectsAtByteOffsetsInBinaryAndTextArchives) {
  FloatMatrix a(2, 3), b(1, 3);
  for (int i = 0; i < 6; ++i) a.data()[i] = 0.5f * i;
  for (int i = 0; i < 3; ++i) b.data()[i] = -1.25f * i;
  std::string binary, text;
  ASSERT_TRUE(AppendKaldiMatrixEntry("utt1", a.view(), false, &binary).ok());
  const int64_t b_offset = static_cast<int64_t>(binary.size()) + 5;  // after "utt2 "
  ASSERT_TRUE(AppendKaldiMatrixEntry("utt2", b.view(), false, &binary).ok());
  ASSERT_TRUE(AppendKaldiMatrixEntry("utt1", a.view(), true, &text).ok());
  const std::string ark = TempPath("feats.ark"), txt = TempPath("feats.txt"), scp = TempPath("feats.scp");
  WriteFile(ark, binary);
  WriteFile(txt, text);
  WriteFile(scp, absl::StrCat("utt2 ", ark, ":", b_offset, "\nutt1 ", ark, ":5\n\nutt3 ", txt, ":5\n"));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadKaldiMatrixTable(absl::StrCat("scp:", scp));
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].key, "utt2");
  EXPECT_EQ((*entries)[0].matrix, b);
  EXPECT_EQ((*entries)[1].matrix, a);
  EXPECT_EQ((*entries)[2].matrix, a);

  WriteFile(scp, absl::StrCat("utt9 ", ark, ":99999\n"));
  absl::Status beyond = ReadKaldiScriptTable(absl::StrCat("scp:", scp)).status();
  EXPECT_EQ(beyond.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(beyond.message(), HasSubstr("line 1 (key 'utt9')"));
  WriteFile(scp, absl::StrCat("utt9 ", ark, ":", b_offset + 3, "\n"));
  EXPECT_FALSE(ReadKaldiScriptTable(absl::StrCat("scp:", scp)).ok());
  WriteFile(TempPath("short.ark"), binary.substr(0, binary.size() - 4));
  WriteFile(scp, absl::StrCat("utt2 ", TempPath("short.ark"), ":", b_offset, "\n"));
  EXPECT_EQ(ReadKaldiScriptTable(absl::StrCat("scp:", scp)).status().code(), absl::StatusCode::kDataLoss);
  WriteFile(scp, "uttonly\n");
  EXPECT_THAT(ReadKaldiScriptTable(absl::StrCat("scp:", scp)).status().message(), HasSubstr("KEY FILE"));
  EXPECT_EQ(ReadKaldiScriptTable("scp:/nonexistent.scp").status().code(), absl::StatusCode::kNotFound);
  WriteFile(scp, "u gunzip -c x.gz |\n");
  EXPECT_EQ(ReadKaldiScriptTable(absl::StrCat("scp:", scp)).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(KaldiScriptTableTest, ArkScpWriterAndTheStreamingReaderRoundTrip) {
  // Random matrices of random shapes (one empty), binary and text.
  std::mt19937 random(std::random_device{}());
  std::vector<KaldiMatrixEntry> entries;
  for (int u = 0; u < 6; ++u) {
    const int rows = u == 3 ? 0 : 1 + static_cast<int>(random() % 40), cols = 1 + static_cast<int>(random() % 13);
    FloatMatrix m(rows, rows == 0 ? 0 : cols);
    for (float& v : m.span()) v = std::uniform_real_distribution<float>(-50, 50)(random);
    entries.push_back({absl::StrCat("utt", u), std::move(m)});
  }
  for (const char* options : {"ark,scp", "ark,scp,t"}) {
    SCOPED_TRACE(options);
    const std::string ark = TempPath("written.ark"), scp = TempPath("written.scp");
    ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat(options, ":", ark, ",", scp), entries).ok());
    // The script Kaldi would write: "KEY ARCHIVE:OFFSET" per entry.
    absl::StatusOr<std::vector<KaldiMatrixEntry>> via_scp = ReadKaldiScriptTable("scp:" + scp);
    ASSERT_TRUE(via_scp.ok()) << via_scp.status();
    ASSERT_EQ(via_scp->size(), entries.size());
    for (const std::string& spec : {"scp:" + scp, "ark:" + ark}) {
      absl::StatusOr<std::unique_ptr<KaldiMatrixTableReader>> table = KaldiMatrixTableReader::Open(spec);
      ASSERT_TRUE(table.ok()) << table.status();
      for (const KaldiMatrixEntry& expected : entries) {
        absl::StatusOr<bool> more = (*table)->Next();
        ASSERT_TRUE(more.ok() && *more) << spec;
        EXPECT_EQ((*table)->key(), expected.key);
        if (std::string(options) == "ark,scp") {
          EXPECT_EQ((*table)->matrix(), expected.matrix) << spec;  // binary: bit for bit
        } else {
          ASSERT_EQ((*table)->matrix().rows(), expected.matrix.rows());
          for (int64_t i = 0; i < expected.matrix.rows() * expected.matrix.cols(); ++i) {
            EXPECT_NEAR((*table)->matrix().data()[i], expected.matrix.data()[i], 1e-4 * 50);
          }
        }
      }
      absl::StatusOr<bool> end = (*table)->Next();
      ASSERT_TRUE(end.ok());
      EXPECT_FALSE(*end);
    }
  }
  EXPECT_EQ(KaldiMatrixTableReader::Open("scp:/nonexistent.scp").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(CheckTableRspecifier("scp:x.scp").ok());
  EXPECT_TRUE(CheckTableRspecifier("ark,t:x.ark").ok());
  EXPECT_FALSE(CheckTableRspecifier("x.ark").ok());
}

}  // namespace
}  // namespace gmmscore
