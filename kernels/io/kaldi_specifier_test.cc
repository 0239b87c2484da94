#include "kernels/io/kaldi_specifier.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

TEST(KaldiSpecifierTest, AcceptsArchiveForms) {
  EXPECT_EQ(ParseArchiveRspecifier("ark:feats.ark")->path, "feats.ark");
  EXPECT_EQ(ParseArchiveRspecifier("ark,t:feats.txt")->path, "feats.txt");
  EXPECT_EQ(ParseArchiveRspecifier("ark,s,cs:-")->path, "-");
  EXPECT_EQ(ParseArchiveRspecifier("ark:/tmp/with:colon")->path, "/tmp/with:colon");
  EXPECT_FALSE(ParseArchiveWspecifier("ark:out.ark")->text);
  EXPECT_TRUE(ParseArchiveWspecifier("ark,t:out.txt")->text);
  EXPECT_TRUE(ParseArchiveWspecifier("t,ark:out.txt")->text);
  EXPECT_FALSE(ParseArchiveWspecifier("ark,b,f:out.ark")->text);
}

TEST(KaldiSpecifierTest, RejectsWithTheRightCode) {
  struct Case {
    const char* spec;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"feats.ark", absl::StatusCode::kInvalidArgument, "expected ark:FILE"},
      {"t:feats.ark", absl::StatusCode::kInvalidArgument, "not a Kaldi archive"},
      {"ark:", absl::StatusCode::kInvalidArgument, "no file name"},
      {"ark,zz:x", absl::StatusCode::kInvalidArgument, "unknown rspecifier option \"zz\""},
      {"scp:feats.scp", absl::StatusCode::kUnimplemented, "an scp table where only an archive"},
      {"ark,p:x", absl::StatusCode::kUnimplemented, "permissive"},
      {"ark:gunzip -c x.gz |", absl::StatusCode::kUnimplemented, "pipes"},
  };
  for (const Case& c : cases) {
    const absl::Status status = ParseArchiveRspecifier(c.spec).status();
    EXPECT_EQ(status.code(), c.code) << c.spec;
    EXPECT_THAT(status.ToString(), HasSubstr(c.message)) << c.spec;
  }
  EXPECT_THAT(ParseArchiveWspecifier("ark,cs:x").status().ToString(),
              HasSubstr("unknown wspecifier option \"cs\""));
  // Writing both at once, as Kaldi does.
  absl::StatusOr<ArchiveSpecifier> both = ParseArchiveWspecifier("ark,scp,t:out/feats.ark,out/feats.scp");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->path, "out/feats.ark");
  EXPECT_EQ(both->script_path, "out/feats.scp");
  EXPECT_TRUE(both->text);
  for (const char* bad : {"ark,scp:feats.ark", "ark,scp:,feats.scp", "ark,scp:-,feats.scp"}) {
    EXPECT_EQ(ParseArchiveWspecifier(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gmmscore
