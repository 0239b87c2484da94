#include "kernels/io/kaldi_text_table.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

std::string TableFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  WriteFile(path, contents);
  return path;
}

TEST(KaldiTextTableTest, ReadsSpk2uttInFileOrder) {
  // Tabs, a CRLF line, a speaker without utterances, a blank line, and a
  // last line without its newline.
  const std::string path =
      TableFile("spk2utt", "spk2 utt3\tutt4\r\nspk1 utt1 utt2\nspk3\n\nspk4 utt9");
  for (const std::string& spec : {path, "ark:" + path, "ark,t:" + path}) {
    absl::StatusOr<std::vector<KaldiTokenListEntry>> table = ReadKaldiTokenListTable(spec);
    ASSERT_TRUE(table.ok()) << spec << ": " << table.status();
    ASSERT_EQ(table->size(), 4u);
    EXPECT_EQ((*table)[0].key, "spk2");
    EXPECT_THAT((*table)[0].value, ElementsAre("utt3", "utt4"));
    EXPECT_THAT((*table)[1].value, ElementsAre("utt1", "utt2"));
    EXPECT_EQ((*table)[2].key, "spk3");
    EXPECT_THAT((*table)[2].value, IsEmpty());
    EXPECT_THAT((*table)[3].value, ElementsAre("utt9"));
  }
}

TEST(KaldiTextTableTest, ReadsUtt2spkAsAMap) {
  const std::string path = TableFile("utt2spk", "utt2 spk1\nutt1 spk1\nutt3 spk2 \n");
  absl::StatusOr<std::map<std::string, std::string>> table = ReadKaldiTokenTable(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, ElementsAre(Pair("utt1", "spk1"), Pair("utt2", "spk1"), Pair("utt3", "spk2")));
}

TEST(KaldiTextTableTest, DuplicateKeysAreInvalidArgument) {
  const std::string path = TableFile("spk2utt", "spk1 utt1\nspk2 utt2\nspk1 utt3\n");
  const absl::Status status = ReadKaldiTokenListTable(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr(path), HasSubstr("'spk1' is given twice, on entries 1 and 3")));
  EXPECT_EQ(ReadKaldiTokenTable(path).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KaldiTextTableTest, Utt2spkNeedsExactlyOneToken) {
  EXPECT_THAT(ReadKaldiTokenTable(TableFile("two", "utt1 spk1 spk2\n")).status().message(),
              AllOf(HasSubstr("'utt1'"), HasSubstr("expected one token, got 2")));
  EXPECT_THAT(ReadKaldiTokenTable(TableFile("none", "utt1\n")).status().message(),
              HasSubstr("expected one token, got 0"));
}

TEST(KaldiTextTableTest, BadSpecifiersAndFiles) {
  EXPECT_EQ(ReadKaldiTokenListTable(TempPath("missing")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadKaldiTokenListTable("ark:" + TempPath("missing")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadKaldiTokenListTable("scp:x.scp").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ReadKaldiTokenListTable("ark,p:x").status().code(), absl::StatusCode::kUnimplemented);
  const std::string binary = TableFile("binary", std::string("spk1 \0B\x04\x01\x00\x00\x00", 11));
  EXPECT_THAT(ReadKaldiTokenListTable(binary).status().message(), HasSubstr("binary entry"));
  EXPECT_THAT(ReadKaldiTokenListTable(TableFile("cr", "spk1\rutt1\n")).status().message(),
              HasSubstr("expected a space after the key"));
}

}  // namespace
}  // namespace gmmscore
