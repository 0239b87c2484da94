#include "server/stream_registry.h"

#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

class IdleStream final : public DrainableStream {
 public:
  void AddHold() override {}
  void ReleaseHold() override {}
  void Drain() override { ++drains; }
  void EndIfIdle(absl::Time) override {}
  int drains = 0;
};

// Streams counted by the connection (peer) they came on, as streams come
// and go; a stream removed twice, or never added, changes nothing.
TEST(StreamRegistryTest, CountsTheStreamsOfEachConnection) {
  StreamRegistry registry(10);
  std::vector<IdleStream> streams(5);
  EXPECT_EQ(registry.connections().connections, 0);
  ASSERT_TRUE(registry.Add(&streams[0], "ipv4:10.0.0.1:5000"));
  ASSERT_TRUE(registry.Add(&streams[1], "ipv4:10.0.0.1:5000"));
  ASSERT_TRUE(registry.Add(&streams[2], "ipv4:10.0.0.1:5001"));
  ASSERT_TRUE(registry.Add(&streams[3], "ipv4:10.0.0.1:5000"));
  EXPECT_EQ(registry.live_streams(), 4);
  EXPECT_EQ(registry.connections().connections, 2);
  EXPECT_EQ(registry.connections().most_streams, 3);

  registry.Remove(&streams[0]);
  registry.Remove(&streams[0]);
  registry.Remove(&streams[4]);  // never added
  EXPECT_EQ(registry.connections().connections, 2);
  EXPECT_EQ(registry.connections().most_streams, 2);
  registry.Remove(&streams[2]);
  EXPECT_EQ(registry.connections().connections, 1);
  registry.Remove(&streams[1]);
  registry.Remove(&streams[3]);
  EXPECT_EQ(registry.connections().connections, 0);
  EXPECT_EQ(registry.connections().most_streams, 0);
  EXPECT_EQ(registry.live_streams(), 0);
}

// Refused streams (over the cap, or after a drain) are not counted.
TEST(StreamRegistryTest, RefusedStreamsAreNotCounted) {
  StreamRegistry registry(2);
  std::vector<IdleStream> streams(4);
  ASSERT_TRUE(registry.Add(&streams[0], "a"));
  ASSERT_TRUE(registry.Add(&streams[1], "b"));
  EXPECT_FALSE(registry.Add(&streams[2], "c"));
  EXPECT_EQ(registry.connections().connections, 2);
  registry.DrainAll();
  EXPECT_EQ(streams[0].drains, 1);
  EXPECT_EQ(streams[1].drains, 1);
  registry.Remove(&streams[1]);
  EXPECT_FALSE(registry.Add(&streams[3], "b"));
  EXPECT_EQ(registry.connections().connections, 1);
  EXPECT_EQ(registry.connections().most_streams, 1);
}

}  // namespace
}  // namespace gmmscore
