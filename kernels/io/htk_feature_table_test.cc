// "htk:" feature tables through the readers every command uses
// (KaldiMatrixTableReader, ReadKaldiMatrixTable, CheckTableRspecifier): one
// parameter file, HTK scripts with extended names, and their errors. Inputs
// are fresh each run; GMMSCORE_TEST_SEED=N repeats one.
#include "kernels/io/htk_feature_table.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/kaldi_script_table.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

// A fresh directory for the running test.
std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = absl::StrCat(::testing::TempDir(), "/htk_table_test_", getpid(), "_", info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

FloatMatrix RandomFrames(std::mt19937_64& random, int64_t rows, int64_t cols) {
  FloatMatrix m(rows, cols);
  std::uniform_real_distribution<float> value(-40.0f, 40.0f);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = value(random);
  return m;
}

// All entries of a table through KaldiMatrixTableReader, one at a time.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadAll(const std::string& rspecifier) {
  absl::StatusOr<std::unique_ptr<KaldiMatrixTableReader>> table = KaldiMatrixTableReader::Open(rspecifier);
  if (!table.ok()) return table.status();
  std::vector<KaldiMatrixEntry> entries;
  while (true) {
    absl::StatusOr<bool> more = (*table)->Next();
    if (!more.ok()) return more.status();
    if (!*more) return entries;
    entries.push_back({(*table)->key(), (*table)->matrix()});
  }
}

FloatMatrix Rows(const FloatMatrix& m, int64_t first, int64_t last) {
  FloatMatrix out(last - first + 1, m.cols());
  for (int64_t t = first; t <= last; ++t) {
    for (int64_t d = 0; d < m.cols(); ++d) out.at(t - first, d) = m.at(t, d);
  }
  return out;
}

TEST(HtkFeatureTableTest, FilesAndScriptsRoundTripThroughTheTableReaders) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  const std::string dir = TempDir();
  // Awkward shapes, each file in another of the forms HTK tools meet.
  struct File {
    std::string name;
    int rows, cols;
    HtkEncodeOptions options;
  };
  const std::vector<File> files = {
      {"empty.mfc", 0, 13, {}},
      {"one.plp", 1, 1, {.little_endian = true}},
      {"dim1.mfc", 9, 1, {.compressed = true}},
      {"big.mfc", 64, 39, {.parameter_kind = 6 | 0400 | 01000}},
      {"wide.fbank", 17, 80, {.compressed = true, .little_endian = true}},
      {"noext", 5, 42, {}},
  };
  std::vector<KaldiMatrixEntry> expected;  // as the file decodes whole
  std::string script = "\n";
  for (const File& file : files) {
    const FloatMatrix frames = RandomFrames(random, file.rows, file.cols);
    const std::string path = absl::StrCat(dir, "/", file.name);
    WriteBytes(path, EncodeHtkParameterFile(frames.view(), file.options));
    absl::StatusOr<HtkFeatures> decoded = ReadHtkParameterFile(path);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    if (!file.options.compressed) EXPECT_EQ(decoded->frames, frames);  // float32: bit for bit
    const std::string key = std::filesystem::path(file.name).stem().string();
    expected.push_back({key, decoded->frames});
    absl::StrAppend(&script, "  ", path, " \t\n\n");  // whitespace around and blank lines
  }
  // Extended names: a logical name, and a range of frames with one.
  const FloatMatrix big = expected[3].matrix, wide = expected[4].matrix;  // copies: expected grows
  absl::StrAppend(&script, "alias=", dir, "/big.mfc\n", "utt.7=", dir, "/big.mfc[10,20]\r\n", "last=", dir,
                  "/big.mfc[63,63]\n", "wseg=", dir, "/wide.fbank[3,9]\n");
  expected.push_back({"alias", big});
  expected.push_back({"utt.7", Rows(big, 10, 20)});
  expected.push_back({"last", Rows(big, 63, 63)});
  expected.push_back({"wseg", Rows(wide, 3, 9)});  // compressed, little-endian
  const std::string list = dir + "/list.scp";
  WriteBytes(list, script);

  for (const auto& read : {ReadAll, +[](const std::string& spec) { return ReadKaldiMatrixTable(spec); }}) {
    absl::StatusOr<std::vector<KaldiMatrixEntry>> got = read("htk:" + list);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ((*got)[i].key, expected[i].key);
      EXPECT_EQ((*got)[i].matrix, expected[i].matrix) << expected[i].key;
    }
  }
  // One file alone: one utterance, keyed by its base name.
  for (const File& file : files) {
    absl::StatusOr<std::vector<KaldiMatrixEntry>> one = ReadAll(absl::StrCat("htk:", dir, "/", file.name));
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ((*one)[0].key, std::filesystem::path(file.name).stem().string());
  }
  // An empty script is an empty table.
  WriteBytes(dir + "/none.scp", "\n  \n");
  absl::StatusOr<std::vector<KaldiMatrixEntry>> none = ReadAll("htk:" + dir + "/none.scp");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST(HtkFeatureTableTest, RelativeNamesAreRelativeToTheCurrentDirectory) {
  const std::string dir = TempDir();
  std::filesystem::create_directories(dir + "/cwd/feats");
  std::filesystem::create_directories(dir + "/scripts");
  const FloatMatrix frames(3, 2, 0.5f);
  WriteBytes(dir + "/cwd/feats/a.mfc", EncodeHtkParameterFile(frames.view()));
  WriteBytes(dir + "/scripts/list", "feats/a.mfc\n");
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir + "/cwd");
  absl::StatusOr<std::vector<KaldiMatrixEntry>> from_cwd = ReadAll("htk:../scripts/list");
  std::filesystem::current_path(dir + "/scripts");  // beside the script: feats/ is not there
  absl::StatusOr<std::vector<KaldiMatrixEntry>> from_scripts = ReadAll("htk:list");
  std::filesystem::current_path(previous);
  ASSERT_TRUE(from_cwd.ok()) << from_cwd.status();
  ASSERT_EQ(from_cwd->size(), 1u);
  EXPECT_EQ((*from_cwd)[0].key, "a");
  EXPECT_EQ((*from_cwd)[0].matrix, frames);
  EXPECT_EQ(from_scripts.status().code(), absl::StatusCode::kNotFound);
}

// A pipe (bash's htk:<(ls *.mfc)) can be read once: it is always a script.
TEST(HtkFeatureTableTest, PipesAreReadAsScripts) {
  const std::string dir = TempDir();
  const FloatMatrix frames(4, 3, -1.25f);
  WriteBytes(dir + "/p.mfc", EncodeHtkParameterFile(frames.view()));
  const std::string fifo = dir + "/list.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << dir << "/p.mfc\n"; });
  absl::StatusOr<std::vector<KaldiMatrixEntry>> got = ReadAll("htk:" + fifo);
  writer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].key, "p");
  EXPECT_EQ((*got)[0].matrix, frames);
}

TEST(HtkFeatureTableTest, ExtendedNamesParseAsHtkWritesThem) {
  absl::StatusOr<HtkTableEntry> entry =
      ParseHtkScriptLine("s23-0001-A_000143_000291.plp=/data/s23-0001-A.plp[143,291]", "w");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->key, "s23-0001-A_000143_000291.plp");  // HTK's logical name, as written
  EXPECT_EQ(entry->path, "/data/s23-0001-A.plp");
  EXPECT_EQ(entry->first_frame, 143);
  EXPECT_EQ(entry->last_frame, 291);
  entry = ParseHtkScriptLine("d/x.y.mfc[0,0]", "w");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->key, "x.y");
  EXPECT_EQ(entry->path, "d/x.y.mfc");
  EXPECT_EQ(entry->first_frame, 0);
  entry = ParseHtkScriptLine("k=d/a.mfc", "w");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->key, "k");
  EXPECT_EQ(entry->first_frame, -1);

  for (const char* bad :
       {"=a.mfc", "k=", "a.mfc[1,2", "a.mfc1,2]", "a.mfc[1]", "a.mfc[1,2,3]", "a.mfc[a,b]", "a.mfc[-1,3]",
        "a.mfc[+1,3]", "a.mfc[3,1]", "a.mfc[1,2]x", "[1,2]", "a.mfc b.mfc", "k=a.mfc[,2]"}) {
    const absl::Status status = ParseHtkScriptLine(bad, "HTK script 's', line 4").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("HTK script 's', line 4: ")) << bad;
  }
}

TEST(HtkFeatureTableTest, ErrorsNameTheScriptLineAndKey) {
  const std::string dir = TempDir();
  const FloatMatrix frames(6, 4, 2.0f);
  const std::string good = dir + "/good.mfc";
  WriteBytes(good, EncodeHtkParameterFile(frames.view()));
  auto status_of = [&](const std::string& script_text) {
    WriteBytes(dir + "/list", script_text);
    return ReadAll("htk:" + dir + "/list").status();
  };

  // Missing: the script, a lone file, a file of the script.
  EXPECT_EQ(ReadAll("htk:" + dir + "/missing.scp").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadKaldiMatrixTable("htk:" + dir + "/missing.scp").status().code(), absl::StatusCode::kNotFound);
  absl::Status status = status_of(absl::StrCat(good, "\n", dir, "/gone.mfc\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("HTK script '", dir, "/list', line 2 (key 'gone')")));

  // Duplicate keys, naming both lines.
  status = status_of(absl::StrCat(good, "\n\n", dir, "/other/good.plp\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 3: key 'good' again (first at HTK script"));
  EXPECT_THAT(status.message(), HasSubstr("line 1)"));
  EXPECT_EQ(status_of(absl::StrCat("a=", good, "[0,1]\na=", good, "[2,3]\n")).code(),
            absl::StatusCode::kInvalidArgument);

  // Malformed and bad ranges.
  status = status_of(absl::StrCat(good, "\nx=", good, "[2,1]\n"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 2: range [2,1]"));
  status = status_of(absl::StrCat("x=", good, "[2,6]\n"));  // frames 0..5
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 1 (key 'x')"));
  EXPECT_THAT(status.message(), HasSubstr("frames [2,6] asked of a file of 6 frames"));
  EXPECT_EQ(status_of(absl::StrCat("x=", good, "[2;3]\n")).code(), absl::StatusCode::kInvalidArgument);

  // Truncated: DATA_LOSS, alone (recognised as binary) or in a script.
  const std::string cut = dir + "/cut.mfc";
  const std::string bytes = EncodeHtkParameterFile(frames.view());
  for (size_t size : {size_t{5}, size_t{12}, bytes.size() - 1}) {
    WriteBytes(cut, bytes.substr(0, size));
    status = ReadAll("htk:" + cut).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << size << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(cut));
    status = status_of(cut + "\n");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_THAT(status.message(), HasSubstr("line 1 (key 'cut')"));
    status = status_of("c=" + cut + "[0,0]\n");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  }
  // Other files go wrong at Next, after the earlier utterances were read.
  WriteBytes(dir + "/list", absl::StrCat(good, "\n", cut, "\n"));
  absl::StatusOr<std::unique_ptr<KaldiMatrixTableReader>> table = KaldiMatrixTableReader::Open("htk:" + dir + "/list");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE((*table)->Next().value_or(false));
  EXPECT_EQ((*table)->key(), "good");
  EXPECT_EQ((*table)->Next().status().code(), absl::StatusCode::kDataLoss);
}

TEST(HtkFeatureTableTest, SpecifiersAreCheckedWithoutOpeningAnything) {
  EXPECT_TRUE(IsHtkRspecifier("htk:list.scp"));
  EXPECT_FALSE(IsHtkRspecifier("ark:htk:x"));
  EXPECT_TRUE(CheckTableRspecifier("htk:/nonexistent/list.scp").ok());
  EXPECT_TRUE(CheckTableRspecifier("htk:a.mfc").ok());
  EXPECT_EQ(CheckTableRspecifier("htk:").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckTableRspecifier("htk:  ").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckTableRspecifier("htk:-").code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CheckTableRspecifier("htk:gunzip -c x |").code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(KaldiMatrixTableReader::Open("htk:-").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(CheckTableRspecifier("ark:x.ark").ok());  // the others unchanged
  EXPECT_TRUE(CheckTableRspecifier("scp:x.scp").ok());
}

}  // namespace
}  // namespace gmmscore
