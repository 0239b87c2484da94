#include "server/client_text.h"

#include <string>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(ClientTextTest, PlainNamesPassUnchanged) {
  EXPECT_EQ(ClientText("spk1"), "spk1");
  EXPECT_EQ(ClientText("en-us_cluster.3"), "en-us_cluster.3");
  EXPECT_EQ(ClientText(""), "");
}

TEST(ClientTextTest, ControlCharactersCannotForgeLogLines) {
  const std::string shown = ClientText("a\nI1124 00:00:00 gmmscored] forged\r\x01\"'\\");
  EXPECT_EQ(shown.find('\n'), std::string::npos);
  EXPECT_EQ(shown.find('\r'), std::string::npos);
  EXPECT_EQ(shown, "a\\nI1124 00:00:00 gmmscored] forged\\r\\x01\\\"\\'\\\\");
}

TEST(ClientTextTest, HighBytesAreEscaped) {
  EXPECT_EQ(ClientText("\xc3\xa9\xff"), "\\xc3\\xa9\\xff");
}

TEST(ClientTextTest, LongTextIsCutAndSaysHowLongItWas) {
  const std::string huge(10 * 1024 * 1024, 'x');
  const std::string shown = ClientText(huge);
  EXPECT_EQ(shown, std::string(kClientTextMaxChars, 'x') + "...(10485760 bytes)");
  EXPECT_EQ(ClientText(std::string(kClientTextMaxChars, 'y')), std::string(kClientTextMaxChars, 'y'));
}

TEST(ClientTextTest, ACutNeverSplitsAnEscape) {
  // 127 plain characters, then a newline: its two-character escape does not
  // fit, so it is left out whole.
  const std::string text = std::string(kClientTextMaxChars - 1, 'z') + "\n\n";
  const std::string shown = ClientText(text);
  EXPECT_EQ(shown, std::string(kClientTextMaxChars - 1, 'z') + "...(129 bytes)");
}

}  // namespace
}  // namespace gmmscore
